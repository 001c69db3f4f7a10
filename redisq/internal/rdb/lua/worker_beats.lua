-- worker beats: ARGV[2...] worker ids. Returns each one's last heartbeat
-- as beat.lua stored it ("now|fields"), or "" when it has expired.
--
-- KEYS: the hashes of the workers ARGV[2...]
--@include keys

local out = {}
for i = 2, #ARGV do
  out[#out + 1] = redis.call('HGET', K_PREFIX .. 'wk:' .. ARGV[i], 'v') or ''
end
return out
