-- dead one: ARGV[2] id, ARGV[3] "requeue"|"delete". {0} not found, {1} done,
-- {2} not dead.
--
-- KEYS: sched, dead, wake, stats, seq; the item's hash
--@include keys
--@include now_ms
--@include revive

local h = ARGV[1] .. ARGV[2]
local f = redis.call('HMGET', h, 'st', 'mem')
if not f[1] then return {0} end
if f[1] ~= 'd' then return {2} end
if ARGV[3] == 'delete' then
  redis.call('ZREM', K_DEAD, f[2])
  redis.call('DEL', h)
  redis.call('HINCRBY', K_STATS, 'deleted', 1)
else
  revive(h, ARGV[2], f[2], (now_ms()))
end
return {1}
