-- run now: makes an item due now without ever delaying it. An item run,
-- or left in place because it is due, no longer has the occurrence policy
-- of its registration (see occ_read).
--
-- KEYS[1] -> {dq:NAME}:sched
-- KEYS[2] -> {dq:NAME}:dead
-- KEYS[3] -> {dq:NAME}:wake
-- KEYS[4] -> {dq:NAME}:stats
-- KEYS[5] -> {dq:NAME}:seq
-- KEYS[6] -> {dq:NAME}:m:ID, the item's hash
-- KEYS[7...] -> for an id that names an occurrence (ARGV[3] not empty)
--   {dq:NAME}:rec:REG, the registration's hash, and {dq:NAME}:m:ID, the
--   extra run's item
-- ARGV[1] -> {dq:NAME}:m:, the item hash prefix
-- ARGV[2] -> the id
-- ARGV[3] -> the registration name the id names ("" if none)
-- ARGV[4] -> the extra run's id
-- ARGV[5] -> the Redis time (ms) it is named after and due at
-- Output: {0} not found, {2} in flight, {1, due} moved to due now, {3,
--   due} a dead or completed item revived, {4, due} already due (left in
--   place), {5} the extra run's id exists (name it after another ms), {6,
--   due} an extra run enqueued for the registration's pending occurrence,
--   which is left in place, {7, slot} due but waiting for its rate slot
--   (left in place), {8} due but waiting for a place under its concurrency
--   limit (left in place)
--@include keys
--@include arm
--@include fmt
--@include now_ms
--@include occ_add
--@include rec_job
--@include rec_key
--@include revive
--@include to_sched
--@include unsched

local h = ARGV[1] .. ARGV[2]
local st, mem, due, p, wt, cq = unpack(redis.call('HMGET', h, 'st', 'mem', 'due', 'p', 'wt', 'cq'))
if not st then return {0} end
if st == 'l' then return {2} end
local now = now_ms()
if st == 'd' or st == 'c' then
  revive(h, ARGV[2], mem, now, st)
  return {3, now}
end
-- An item waiting for its rate slot is due: it keeps its place, and the
-- limit holds (see rate_read).
if wt then
  redis.call('HDEL', h, 'op')
  return {7, tonumber(wt)}
end
if cq == '1' then
  redis.call('HDEL', h, 'op')
  return {8}
end
due = tonumber(due)
if due <= now then
  redis.call('HDEL', h, 'op')
  return {4, due}
end
if ARGV[3] ~= '' then
  local R = rec_key(ARGV[3])
  if redis.call('HGET', R, 'id') == ARGV[2] then
    if redis.call('EXISTS', ARGV[1] .. ARGV[4]) == 1 then return {5} end
    -- Due at the time it is named after: TIME read just before.
    local at = tonumber(ARGV[5])
    local m = {}
    m[occ_add(ARGV[4], at, p or '', now, rec_job(R))] = true
    arm(m)
    redis.call('HSET', R, 'rn', fmt(at))
    return {6, at}
  end
end
unsched(h, 's', mem)
to_sched(h, ARGV[2], now)
redis.call('HINCRBY', K_STATS, 'rescheduled', 1)
return {1, now}
