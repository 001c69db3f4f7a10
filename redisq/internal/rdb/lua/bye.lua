-- bye: a stopping worker leaves the list at once.
--
-- KEYS[1] -> {dq:NAME}:workers
-- KEYS[2] -> {dq:NAME}:wk:ID, this worker's hash
-- ARGV[1] -> {dq:NAME}:m:, the item hash prefix
-- ARGV[2] -> the worker id
-- Output: {1}
--@include keys

redis.call('ZREM', K_PREFIX .. 'workers', ARGV[2])
redis.call('DEL', K_PREFIX .. 'wk:' .. ARGV[2])
return {1}
