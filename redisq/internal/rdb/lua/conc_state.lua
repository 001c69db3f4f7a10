-- concurrency state: ARGV[2...] limit keys. Returns {now ms, then for each
-- key: K (0: no limit), its items leased (holding a place: leases not
-- expired), items waiting for a place}. Read only.
--
-- KEYS: the limits, and for each key its leased and its waiting items
--@include common

local now = now_ms()
local out = {now}
for a = 2, #ARGV do
  local key = ARGV[a]
  local F, Q = K_PREFIX .. 'cf:' .. key, K_PREFIX .. 'cq:' .. key
  out[#out + 1] = tonumber(redis.call('HGET', K_CONC, key)) or 0
  out[#out + 1] = redis.call('ZCOUNT', F, '(' .. string.format('%d', now), '+inf')
  out[#out + 1] = redis.call('ZCARD', Q)
end
return out
