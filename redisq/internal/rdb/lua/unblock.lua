-- unblock wakes the BZPOPMIN of the waiter whose private key is KEYS[1];
-- the key expires on its own if the waiter already returned. Not a queue
-- script: it reads KEYS.
--
-- KEYS[1] -> {dq:NAME}:w:INST, a waiter's private key
-- ARGV: none
-- Output: 1

redis.call('ZADD', KEYS[1], 0, 'x')
redis.call('PEXPIRE', KEYS[1], 60000)
return 1
