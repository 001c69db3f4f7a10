-- stopFeed: KEYS a keeper's private stream. Ends that keeper's blocked
-- XREAD (the key expires within a minute).

redis.call('XADD', KEYS[1], '*', 'x', '1')
redis.call('PEXPIRE', KEYS[1], 60000)
return 1
