-- time: Redis TIME on the master of the queue's slot, where its scripts
-- read it (a plain TIME from a Cluster client goes to any node).
--
-- KEYS[1] -> {dq:NAME}:seq (declared for routing only; nothing is read)
-- ARGV[1] -> {dq:NAME}:m:, the item hash prefix (unused)
-- Output: {seconds, microseconds}, as TIME

return redis.call('TIME')
