-- time: Redis TIME on the master of the queue's slot, where its scripts
-- read it (a plain TIME from a Cluster client goes to any node).
--
-- KEYS: seq (declared for routing only; nothing is read)
-- Output: {seconds, microseconds}, as TIME

return redis.call('TIME')
