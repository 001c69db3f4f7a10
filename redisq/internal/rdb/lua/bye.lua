-- bye: ARGV[2] worker id.
-- A stopping worker leaves the list at once.
--
-- KEYS: the worker zset and this worker's hash
--@include keys

redis.call('ZREM', K_PREFIX .. 'workers', ARGV[2])
redis.call('DEL', K_PREFIX .. 'wk:' .. ARGV[2])
return {1}
