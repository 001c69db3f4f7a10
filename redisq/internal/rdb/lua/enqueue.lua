-- enqueue: ARGV[2] id, ARGV[3] payload, ARGV[4] "at" (ARGV[5] due ms) or
-- "after" (ARGV[5] delay us), ARGV[6...] the job (job_fields). Returns {0} when the id exists, else
-- {1, due, now}. O(log n).
--
-- KEYS: sched, wake, seq; the item's hash
--@include common

local h = ARGV[1] .. ARGV[2]
if redis.call('EXISTS', h) == 1 then return {0} end
local now, frac = now_ms()
local due = tonumber(ARGV[5])
if ARGV[4] == 'after' then due = after(now, frac, due) else due = clamp_due(due) end
local mem = new_member(ARGV[2])
if ARGV[6] == '0' then
  redis.call('HSET', h, 'p', ARGV[3], 'due', due, 'att', 0, 'st', 's', 'mem', mem, 'enq', now)
else
  redis.call('HSET', h, unpack(job_fields(6, {'p', ARGV[3], 'due', due, 'att', 0, 'st', 's', 'mem', mem, 'enq', now})))
end
redis.call('ZADD', K_SCHED, due, mem)
arm_if_head(mem)
return {1, due, now}
