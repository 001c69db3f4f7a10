-- stop feed ends the blocked XREAD of the keeper whose private stream is
-- KEYS[1] (the key expires within a minute).
--
-- KEYS: KEYS[1] a keeper's private stream (this script reads KEYS; no ARGV)

redis.call('XADD', KEYS[1], '*', 'x', '1')
redis.call('PEXPIRE', KEYS[1], 60000)
return 1
