-- give up timer: ARGV[2] timer id. A Queue closing while it owns the timer gives
-- it up and wakes another waiter to take it over.
--
-- KEYS: wake, timer
--@include keys

local v = redis.call('GET', K_TIMER)
if v and string.sub(v, 1, #ARGV[2] + 1) == ARGV[2] .. '|' then
  redis.call('DEL', K_TIMER)
  redis.call('ZADD', K_WAKE, 0, 'w')
end
return 1
