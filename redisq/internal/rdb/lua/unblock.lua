-- unblock wakes the BZPOPMIN of the waiter whose private key is KEYS[1];
-- the key expires on its own if the waiter already returned.
--
-- KEYS: KEYS[1] a waiter's private key (this script reads KEYS; no ARGV)

redis.call('ZADD', KEYS[1], 0, 'x')
redis.call('PEXPIRE', KEYS[1], 60000)
return 1
