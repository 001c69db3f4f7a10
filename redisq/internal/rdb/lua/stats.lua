-- stats: the queue's sizes and counters. The head score is nil (Lua
-- false) when sched is empty: every integer is a possible score. done,
-- read only, is not declared: most queues have none.
--
-- KEYS[1] -> {dq:NAME}:sched
-- KEYS[2] -> {dq:NAME}:lease
-- KEYS[3] -> {dq:NAME}:dead
-- KEYS[4] -> {dq:NAME}:stats
-- KEYS[5] -> {dq:NAME}:seq
-- KEYS[6] -> {dq:NAME}:late
-- ARGV[1] -> {dq:NAME}:m:, the item hash prefix
-- Output: {now, scheduled, due, headScore|nil, leased, dead, {k1, v1, ...}
--   counters, {bound, count, ...} lateness, {n, s0, r, paused, lim, cc,
--   ql} of the sequence, completed}
--@include keys
--@include now_ms

local now = now_ms()
local head = redis.call('ZRANGE', K_SCHED, 0, 0, 'WITHSCORES')
local hs = false
if head[1] then hs = tonumber(head[2]) end
local out = {now, redis.call('ZCARD', K_SCHED), redis.call('ZCOUNT', K_SCHED, '-inf', now), hs,
  redis.call('ZCARD', K_LEASE), redis.call('ZCARD', K_DEAD)}
out[7] = redis.call('HGETALL', K_STATS)
out[8] = redis.call('HGETALL', K_LATE)
out[9] = redis.call('HMGET', K_SEQ, 'n', 's0', 'r', 'paused', 'lim', 'cc', 'ql')
out[10] = redis.call('ZCOUNT', K_DONE, '(' .. string.format('%d', now), '+inf')
return out
