-- resume: unmarks the paused queue and rings the marker for the waiting
-- consumers.
--
-- KEYS[1] -> {dq:NAME}:seq
-- KEYS[2] -> {dq:NAME}:wake
-- ARGV[1] -> {dq:NAME}:m:, the item hash prefix
-- Output: {1} resumed, {0} was not paused
--@include keys

if redis.call('HDEL', K_SEQ, 'paused') == 0 then return {0} end
redis.call('ZADD', K_WAKE, 0, 'w')
return {1}
