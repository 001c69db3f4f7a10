-- migrate converts the data of a queue stored by an earlier version, once:
-- the sequence was a string (INCR) and the stats hash counted enqueued and
-- delivered items. The sequence becomes the hash next_seq keeps, its start
-- s0 set so that n - s0 - r is the enqueued count that version kept, and the
-- two counters go (Delivered is the lateness histogram's count, which that
-- version kept as well). New runs it; one TYPE when there is nothing to do.
--
-- KEYS[1] -> {dq:NAME}:stats
-- KEYS[2] -> {dq:NAME}:seq
-- KEYS[3] -> {dq:NAME}:parts, the queue's partition table
-- ARGV[1] -> {dq:NAME}:m:, the item hash prefix
-- Output: {1} converted, {0} nothing to do, {2} changing nothing when NAME
--   is a partitioned queue (its table exists): its items are in its
--   partitions' queues
--@include keys

if redis.call('EXISTS', K_PREFIX .. 'parts') == 1 then return {2} end
if redis.call('TYPE', K_SEQ).ok ~= 'string' then return {0} end
local n = tonumber(redis.call('GET', K_SEQ))
local enq = tonumber(redis.call('HGET', K_STATS, 'enqueued') or '0')
redis.call('DEL', K_SEQ)
redis.call('HSET', K_SEQ, 'n', string.format('%d', n), 's0', string.format('%d', n - enq))
redis.call('HDEL', K_STATS, 'enqueued', 'delivered')
return {1}
