-- schedule (upsert): stores payload and job under an id whatever its
-- state but leased; the job replaces the item's, and a dead item is
-- revived with attempts reset.
--
-- KEYS[1] -> {dq:NAME}:sched
-- KEYS[2] -> {dq:NAME}:dead
-- KEYS[3] -> {dq:NAME}:wake
-- KEYS[4] -> {dq:NAME}:stats
-- KEYS[5] -> {dq:NAME}:seq
-- KEYS[6] -> {dq:NAME}:m:ID, the item's hash
-- ARGV[1] -> {dq:NAME}:m:, the item hash prefix
-- ARGV[2] -> the id
-- ARGV[3] -> the payload
-- ARGV[4] -> "at" (ARGV[5] due ms) or "after" (ARGV[5] delay µs)
-- ARGV[5] -> the due time or the delay
-- ARGV[6...] -> the job (job_fields), then the request id
-- Output: {1, due} created, {3, due} replaced, {2} in flight (nothing
--   changed); a rerun of the same request returns the first run's reply
--@include keys
--@include after
--@include clamp_due
--@include enc
--@include job_fields
--@include now_ms
--@include replay
--@include sched_new
--@include to_sched
--@include unsched
--@include waiting_of

local h = ARGV[1] .. ARGV[2]
local f = redis.call('HMGET', h, 'st', 'mem', 'rq', 'rr')
local again = replay(f[3], f[4], false)
if again then return again end
if f[1] == 'l' then return {2} end
local now, frac = now_ms()
local due = tonumber(ARGV[5])
if ARGV[4] == 'after' then due = after(now, frac, due) else due = clamp_due(due) end
local rid = ARGV[#ARGV]
if not f[1] then
  redis.call('HSET', h, unpack(job_fields(6, {'p', ARGV[3], 'att', 0, 'enq', now})))
  sched_new(h, ARGV[2], due, 'rq', rid, 'rr', enc({1, due}))
  return {1, due}
end
unsched(h, f[1], f[2], f[1] == 's' and waiting_of(h))
redis.call('HDEL', h, {{JOB_FIELDS}})
redis.call('HSET', h, unpack(job_fields(6, {'p', ARGV[3]})))
to_sched(h, ARGV[2], due, 'rq', rid, 'rr', enc({3, due}))
redis.call('HINCRBY', K_STATS, 'rescheduled', 1)
return {3, due}
