-- stop feed ends the blocked XREAD of the keeper whose private stream it
-- is given (the key expires within a minute). Not a queue script: it
-- reads KEYS.
--
-- KEYS[1] -> {dq:NAME}:w:INST, a keeper's private stream
-- ARGV: none
-- Output: 1

redis.call('XADD', KEYS[1], '*', 'x', '1')
redis.call('PEXPIRE', KEYS[1], 60000)
return 1
