-- dead one: requeues (revive) or deletes one dead item.
--
-- KEYS[1] -> {dq:NAME}:sched
-- KEYS[2] -> {dq:NAME}:dead
-- KEYS[3] -> {dq:NAME}:wake
-- KEYS[4] -> {dq:NAME}:stats
-- KEYS[5] -> {dq:NAME}:seq
-- KEYS[6] -> {dq:NAME}:m:ID, the item's hash
-- ARGV[1] -> {dq:NAME}:m:, the item hash prefix
-- ARGV[2] -> the id
-- ARGV[3] -> "requeue" or "delete"
-- Output: {0} not found, {1} done, {2} not dead
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
