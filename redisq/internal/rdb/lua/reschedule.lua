-- reschedule: moves a scheduled item, or revives a dead one with
-- attempts reset to 0.
--
-- KEYS[1] -> {dq:NAME}:sched
-- KEYS[2] -> {dq:NAME}:dead
-- KEYS[3] -> {dq:NAME}:wake
-- KEYS[4] -> {dq:NAME}:stats
-- KEYS[5] -> {dq:NAME}:seq
-- KEYS[6] -> {dq:NAME}:m:ID, the item's hash
-- ARGV[1] -> {dq:NAME}:m:, the item hash prefix
-- ARGV[2] -> the id
-- ARGV[3] -> "at" (ARGV[4] due ms) or "after" (ARGV[4] delay µs)
-- ARGV[4] -> the due time or the delay
-- Output: {0} not found, {1, due} moved, {2} in flight
--@include keys
--@include after
--@include clamp_due
--@include now_ms
--@include to_sched
--@include unsched
--@include waiting_of

local h = ARGV[1] .. ARGV[2]
local f = redis.call('HMGET', h, 'st', 'mem')
if not f[1] then return {0} end
if f[1] == 'l' then return {2} end
local w = f[1] == 's' and waiting_of(h)
local now, frac = now_ms()
local due = tonumber(ARGV[4])
if ARGV[3] == 'after' then due = after(now, frac, due) else due = clamp_due(due) end
unsched(h, f[1], f[2], w)
to_sched(h, ARGV[2], due)
redis.call('HINCRBY', K_STATS, 'rescheduled', 1)
return {1, due}
