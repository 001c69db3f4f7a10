-- enqueue many: stores k items as enqueue does each, applied as if one
-- after the other: a debounced item replaces the waiting holder of its
-- key's window, an earlier item of the batch included (which is then not
-- stored, though reported stored: it was, and was replaced). The batch
-- costs one EXISTS (ids are checked one by one only when some exists), one
-- HSET per new item, and for all new items one HINCRBY of the sequence and
-- one ZADD; the caller keeps k <= EnqueueBatch. O(k log n). The items
-- debounced items replace are found while running.
--
-- KEYS[1] -> {dq:NAME}:sched
-- KEYS[2] -> {dq:NAME}:wake
-- KEYS[3] -> {dq:NAME}:seq
-- KEYS[4...] -> per item {dq:NAME}:m:ID, its hash, and {dq:NAME}:u:KEY,
--   its unique key's window when it has one
-- ARGV[1] -> {dq:NAME}:m:, the item hash prefix
-- ARGV[2] -> k
-- ARGV[3...] -> k times: id, payload, "at"|"after", due ms | delay µs, the
--   job (job_fields), the unique key, its window and mode, as enqueue
-- Output: {now, due1, ..., duek} with nil (Lua false) for an id that
--   exists (or repeats an earlier id of the batch) and "u" for an item
--   whose unique key's window is held (by an earlier enqueue, or an
--   earlier item of the batch)
--@include keys
--@include after
--@include clamp_due
--@include drop_waiting
--@include job_fields
--@include job_get
--@include next_seq
--@include now_ms
--@include rate_behind
--@include rate_early
--@include rate_tail
--@include unique_take
--@include window_holder
--@include window_set

local now, frac = now_ms()
local k = tonumber(ARGV[2])
local out = {now}
local new, seen, hs, at = {}, {}, {}, {}
-- at[j]: where item j's arguments start (its id is ARGV[at[j] + 1]).
local b = 2
for j = 1, k do
  at[j] = b
  hs[j] = ARGV[1] .. ARGV[b + 1]
  b = b + 8 + 2 * tonumber(ARGV[b + 5])
end
-- One EXISTS for the whole batch; only a batch with an existing id checks
-- its ids one by one.
local some = redis.call('EXISTS', unpack(hs)) > 0
-- The rate limits and tails of the batch's limit keys, read before the
-- first write: an item due now of a key whose waiting items are still
-- ahead goes in waiting behind them (rate_behind).
local tails, lks = {}, {}
for j = 1, k do
  local b = at[j]
  local u = b + 6 + 2 * tonumber(ARGV[b + 5])
  local lk = ARGV[u + 2] ~= 'd' and job_get(b + 5, 'lk')
  if lk and rate_early(lk) then
    lks[j] = lk
    rate_tail(tails, lk)
  end
end
-- The waiting holder of each debounced key's window, read before the
-- first write (see the key layout): hold[key] = {id, member, waiting_of}
-- or false.
local hold = {}
for j = 1, k do
  local b = at[j]
  local u = b + 6 + 2 * tonumber(ARGV[b + 5])
  if ARGV[u + 2] == 'd' and hold[ARGV[u]] == nil then
    local hid, hmem, hw = window_holder(ARGV[u])
    hold[ARGV[u]] = hid and {hid, hmem, hw} or false
  end
end
-- pend[key]: the item of the batch that holds key's window; drop[j]: item
-- j was replaced by a later one; gone: the waiting items of Redis that
-- debounced items replace (removed[id] once replaced).
local pend, drop, gone, removed = {}, {}, {}, {}
for j = 1, k do
  local b = at[j]
  local id = ARGV[b + 1]
  local u = b + 6 + 2 * tonumber(ARGV[b + 5])
  local key, mode = ARGV[u], ARGV[u + 2]
  local hj, hr
  if mode == 'd' then
    hj = pend[key]
    if not hj then hr = hold[key] end
  end
  local own = (hj and ARGV[at[hj] + 1] == id) or (hr and hr[1] == id)
  if not own and (seen[id] or (some and not removed[id] and redis.call('EXISTS', hs[j]) == 1)) then
    out[j + 1] = false
  elseif mode ~= 'd' and not unique_take(key, ARGV[u + 1], id) then
    out[j + 1] = 'u'
  else
    if hj then
      drop[hj] = true
      seen[ARGV[at[hj] + 1]] = nil
    elseif hr then
      gone[#gone + 1] = hr
      removed[hr[1]] = true
      hold[key] = false
    end
    if mode == 'd' then window_set(key, ARGV[u + 1], id) end
    if key ~= '' then pend[key] = j end
    seen[id] = true
    local due = tonumber(ARGV[b + 4])
    if ARGV[b + 3] == 'after' then due = after(now, frac, due) else due = clamp_due(due) end
    new[#new + 1] = j
    out[j + 1] = due
  end
end
for _, g in ipairs(gone) do drop_waiting(g[1], g[2], g[3]) end
if #new == 0 then return out end
local seq = next_seq(#new) - #new
local z = {}
local nowus = now * 1000 + frac
for i, j in ipairs(new) do
  if not drop[j] then
    local b = at[j]
    local id = ARGV[b + 1]
    local mem = string.format('%016.0f', seq + i) .. ':' .. id
    local score = out[j + 1]
    if lks[j] and out[j + 1] <= now + 1 then
      local slot, sdue = rate_behind(tails, lks[j], nowus)
      if slot then
        score = sdue
        redis.call('ZADD', tails[lks[j]].W, string.format('%d', slot), mem)
      end
    end
    if ARGV[b + 5] == '0' then
      redis.call('HSET', hs[j], 'p', ARGV[b + 2], 'due', out[j + 1], 'att', 0, 'st', 's', 'mem', mem, 'enq', now)
    else
      redis.call('HSET', hs[j], unpack(job_fields(b + 5, {'p', ARGV[b + 2], 'due', out[j + 1], 'att', 0, 'st', 's', 'mem', mem, 'enq', now})))
    end
    if score ~= out[j + 1] then redis.call('HSET', hs[j], 'wt', score) end
    z[#z + 1] = score
    z[#z + 1] = mem
  end
end
if #z > 0 then redis.call('ZADD', K_SCHED, unpack(z)) end
local head = redis.call('ZRANGE', K_SCHED, 0, 0)
if head[1] and seen[string.sub(head[1], 18)] then redis.call('ZADD', K_WAKE, 0, 'w') end
return out
