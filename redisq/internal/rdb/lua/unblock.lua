-- unblock: K_SCHED a waiter's private key. Wakes exactly that waiter's
-- BZPOPMIN; the key expires on its own if the waiter already returned.

redis.call('ZADD', KEYS[1], 0, 'x')
redis.call('PEXPIRE', KEYS[1], 60000)
return 1
