-- concurrency state: the concurrency limit of each key and its use. Read
-- only.
--
-- KEYS[1] -> {dq:NAME}:conc, the concurrency limits
-- KEYS[2...] -> per key {dq:NAME}:cf:KEY, {dq:NAME}:cq:KEY and
--   {dq:NAME}:cp:KEY, its leased, waiting and given items
-- ARGV[1] -> {dq:NAME}:m:, the item hash prefix
-- ARGV[2...] -> the limit keys
-- Output: {now ms, then for each key: K (0: none, or being removed), 1
--   when it has an entry (K 0: being removed), its items leased (holding
--   a place: leases not expired), given a place and due, waiting for a
--   place}
--@include keys
--@include conc_keys
--@include now_ms

local now = now_ms()
local out = {now}
for a = 2, #ARGV do
  local c = conc_keys(ARGV[a])
  local k = redis.call('HGET', K_CONC, ARGV[a])
  out[#out + 1] = tonumber(k) or 0
  out[#out + 1] = k and 1 or 0
  out[#out + 1] = redis.call('ZCOUNT', c.F, '(' .. string.format('%d', now), '+inf')
  out[#out + 1] = redis.call('ZCARD', c.P)
  out[#out + 1] = redis.call('ZCARD', c.Q)
end
return out
