-- enqueue many: ARGV[2] k, then k times id, payload, "at"|"after", due ms |
-- delay us, and the job (job_fields), as enqueue. Returns {now, due1, ..., duek} with nil (Lua false)
-- for an id that exists (or repeats an earlier id of the batch). The batch
-- costs one EXISTS (ids are checked one by one only when some exists), one
-- HSET per new item, and for all new items one HINCRBY of the sequence and
-- one ZADD; the caller keeps k <= EnqueueBatch. O(k log n).
--
-- KEYS: sched, wake, seq; each item's hash
--@include common

local now, frac = now_ms()
local k = tonumber(ARGV[2])
local out = {now}
local new, seen, hs, at = {}, {}, {}, {}
-- at[j]: where item j's arguments start (its id is ARGV[at[j] + 1]).
local b = 2
for j = 1, k do
  at[j] = b
  hs[j] = ARGV[1] .. ARGV[b + 1]
  b = b + 5 + 2 * tonumber(ARGV[b + 5])
end
-- One EXISTS for the whole batch; only a batch with an existing id checks
-- its ids one by one.
local some = redis.call('EXISTS', unpack(hs)) > 0
for j = 1, k do
  local b = at[j]
  local id = ARGV[b + 1]
  if seen[id] or (some and redis.call('EXISTS', hs[j]) == 1) then
    out[j + 1] = false
  else
    seen[id] = true
    local due = tonumber(ARGV[b + 4])
    if ARGV[b + 3] == 'after' then due = after(now, frac, due) else due = clamp_due(due) end
    new[#new + 1] = j
    out[j + 1] = due
  end
end
if #new == 0 then return out end
local seq = next_seq(#new) - #new
local z = {}
for i, j in ipairs(new) do
  local b = at[j]
  local id = ARGV[b + 1]
  local mem = string.format('%016.0f', seq + i) .. ':' .. id
  if ARGV[b + 5] == '0' then
    redis.call('HSET', hs[j], 'p', ARGV[b + 2], 'due', out[j + 1], 'att', 0, 'st', 's', 'mem', mem, 'enq', now)
  else
    redis.call('HSET', hs[j], unpack(job_fields(b + 5, {'p', ARGV[b + 2], 'due', out[j + 1], 'att', 0, 'st', 's', 'mem', mem, 'enq', now})))
  end
  z[#z + 1] = out[j + 1]
  z[#z + 1] = mem
end
redis.call('ZADD', K_SCHED, unpack(z))
local head = redis.call('ZRANGE', K_SCHED, 0, 0)
if head[1] and seen[string.sub(head[1], 18)] then redis.call('ZADD', K_WAKE, 0, 'w') end
return out
