-- resume: unmarks it and rings the marker for the waiting consumers. {1}
-- resumed, {0} was not paused.
--
-- KEYS: seq, wake
--@include keys

if redis.call('HDEL', K_SEQ, 'paused') == 0 then return {0} end
redis.call('ZADD', K_WAKE, 0, 'w')
return {1}
