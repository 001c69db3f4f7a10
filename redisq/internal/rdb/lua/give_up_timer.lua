-- give up timer: a Queue closing while it owns the timer gives it up and
-- wakes another waiter to take it over.
--
-- KEYS[1] -> {dq:NAME}:wake
-- KEYS[2] -> {dq:NAME}:timer
-- ARGV[1] -> {dq:NAME}:m:, the item hash prefix
-- ARGV[2] -> the timer id of the Queue closing
-- Output: 1
--@include keys

local v = redis.call('GET', K_TIMER)
if v and string.sub(v, 1, #ARGV[2] + 1) == ARGV[2] .. '|' then
  redis.call('DEL', K_TIMER)
  redis.call('ZADD', K_WAKE, 0, 'w')
end
return 1
