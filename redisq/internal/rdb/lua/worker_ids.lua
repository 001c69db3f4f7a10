-- worker ids: the live workers (heartbeat not expired), soonest to expire
-- first.
--
-- KEYS[1] -> {dq:NAME}:workers
-- ARGV[1] -> {dq:NAME}:m:, the item hash prefix
-- ARGV[2] -> the most ids to return
-- Output: {now, id, expiry, ...}
--@include keys

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ids = redis.call('ZRANGEBYSCORE', K_PREFIX .. 'workers', '(' .. now, '+inf', 'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[2]))
local out = {now}
for i = 1, #ids do out[#out + 1] = ids[i] end
return out
