-- cancel: removes an item in any state, or marks a leased one as
-- cancelled (marking again changes nothing).
--
-- KEYS[1] -> {dq:NAME}:sched
-- KEYS[2] -> {dq:NAME}:dead
-- KEYS[3] -> {dq:NAME}:stats
-- KEYS[4] -> {dq:NAME}:m:ID, the item's hash
-- KEYS[5] -> {dq:NAME}:r:RID, the request's reply
-- ARGV[1] -> {dq:NAME}:m:, the item hash prefix
-- ARGV[2] -> the id
-- ARGV[3] -> the request id
-- Output: {0} not found, {1} removed, {2} in flight (marked); a rerun of a
--   request that removed the item returns {1}
--@include keys
--@include done_gone
--@include replay
--@include waiting_end
--@include waiting_of

local h = ARGV[1] .. ARGV[2]
local f = redis.call('HMGET', h, 'st', 'mem')
if not f[1] then return replay(nil, nil, true) or {0} end
if f[1] == 'l' then
  redis.call('HSET', h, 'can', 1)
  return {2}
end
if f[1] == 's' then
  waiting_end(waiting_of(h), h, f[2])
  redis.call('ZREM', K_SCHED, f[2])
elseif f[1] == 'c' then redis.call('ZREM', K_DONE, f[2])
else redis.call('ZREM', K_DEAD, f[2]) end
redis.call('DEL', h)
redis.call('HINCRBY', K_STATS, 'cancelled', 1)
return done_gone({1})
