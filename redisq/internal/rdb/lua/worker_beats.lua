-- worker beats: each worker's last heartbeat as beat.lua stored it.
--
-- KEYS[1...] -> {dq:NAME}:wk:ID, the hash of each worker
-- ARGV[1] -> {dq:NAME}:m:, the item hash prefix
-- ARGV[2...] -> the worker ids
-- Output: {"now|fields", ...}, "" for a worker whose heartbeat has
--   expired
--@include keys

local out = {}
for i = 2, #ARGV do
  out[#out + 1] = redis.call('HGET', K_PREFIX .. 'wk:' .. ARGV[i], 'v') or ''
end
return out
