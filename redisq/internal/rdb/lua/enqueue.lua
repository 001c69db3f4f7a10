-- enqueue: stores one item, O(log n). An item due now (or at the next
-- ms, as one enqueued with no delay is) of a limit key whose waiting items
-- are still ahead goes in waiting behind them (rate_behind). A unique
-- enqueue is refused while its key's window is held; a debounced one
-- replaces the waiting item holding it (see unique_take), which is found
-- while running.
--
-- KEYS[1] -> {dq:NAME}:sched
-- KEYS[2] -> {dq:NAME}:wake
-- KEYS[3] -> {dq:NAME}:seq
-- KEYS[4] -> {dq:NAME}:m:ID, the item's hash
-- KEYS[5...] -> {dq:NAME}:u:KEY, the unique key's window, when the job
--   has a unique key
-- ARGV[1] -> {dq:NAME}:m:, the item hash prefix
-- ARGV[2] -> the id
-- ARGV[3] -> the payload
-- ARGV[4] -> "at" (ARGV[5] due ms) or "after" (ARGV[5] delay µs)
-- ARGV[5] -> the due time or the delay
-- ARGV[6...] -> the job (job_fields), then the unique key ("" none), its
--   window in ms and its mode, 'u' or 'd' (see unique_take)
-- Output: {0} when the id exists (unless it is the waiting item a
--   debounced enqueue replaces), {2} when the unique key's window is held,
--   else {1, due, now}
--@include keys
--@include after
--@include arm_if_head
--@include clamp_due
--@include drop_waiting
--@include job_fields
--@include job_get
--@include limit_key
--@include new_member
--@include now_ms
--@include rate_behind
--@include rate_early
--@include unique_take
--@include window_holder
--@include window_set

local h = ARGV[1] .. ARGV[2]
local u = 7 + 2 * tonumber(ARGV[6])
local now, frac = now_ms()
local due = tonumber(ARGV[5])
if ARGV[4] == 'after' then due = after(now, frac, due) else due = clamp_due(due) end
-- Read before the first write (see the key layout).
local lk = ARGV[u + 2] ~= 'd' and due <= now + 1 and job_get(6, 'lk')
local slot, sdue
if lk and rate_early(lk) then slot, sdue = rate_behind({}, lk, now * 1000 + frac) end
if ARGV[u + 2] == 'd' then
  -- Every read before the first write (see the key layout).
  local hid, hmem, hw = window_holder(ARGV[u])
  if hid ~= ARGV[2] and redis.call('EXISTS', h) == 1 then return {0} end
  if hid then drop_waiting(hid, hmem, hw) end
  window_set(ARGV[u], ARGV[u + 1], ARGV[2])
else
  if redis.call('EXISTS', h) == 1 then return {0} end
  if not unique_take(ARGV[u], ARGV[u + 1], ARGV[2]) then return {2} end
end
local mem = new_member(ARGV[2])
if ARGV[6] == '0' then
  redis.call('HSET', h, 'p', ARGV[3], 'due', due, 'att', 0, 'st', 's', 'mem', mem, 'enq', now)
else
  redis.call('HSET', h, unpack(job_fields(6, {'p', ARGV[3], 'due', due, 'att', 0, 'st', 's', 'mem', mem, 'enq', now})))
end
if slot then
  redis.call('HSET', h, 'wt', sdue)
  redis.call('ZADD', limit_key('rw', lk), string.format('%d', slot), mem)
  redis.call('ZADD', K_SCHED, sdue, mem)
else
  redis.call('ZADD', K_SCHED, due, mem)
end
arm_if_head(mem)
return {1, due, now}
