-- advance: enqueues the occurrences of a keeper's plan for a
-- registration, each after the watermark, increasing (those whose item
-- exists are not enqueued again). The compare-and-set on the watermark is
-- what makes the keepers' racing calls enqueue each occurrence once: the
-- first sets the watermark to the last occurrence it enqueued, and the
-- others find it moved.
--
-- KEYS[1] -> {dq:NAME}:sched
-- KEYS[2] -> {dq:NAME}:seq
-- KEYS[3] -> {dq:NAME}:wake
-- KEYS[4] -> {dq:NAME}:rec:REG, the registration's hash
-- KEYS[5...] -> {dq:NAME}:m:ID, the item of each occurrence of the plan
-- ARGV[1] -> {dq:NAME}:m:, the item hash prefix
-- ARGV[2] -> the registration's name
-- ARGV[3] -> the generation the plan was computed from
-- ARGV[4] -> the watermark (ms) it was computed from
-- ARGV[5] -> the first occurrence the plan skips ("" if none)
-- ARGV[6] -> "1" when the series ends after the plan
-- ARGV[7...] -> per occurrence: the occurrence (ms), when its item is due
--   (the occurrence, or later for a jittered schedule) and its item id
-- Output: {1, now} done; {0, now, g, at, end} when the registration is not
--   at that generation and watermark, or has ended or is paused (end 1; g
--   0: it is gone), and nothing is done; {2, now} when the watermark has
--   not come yet; {3, now} when the occurrence the plan skips has not come
--   yet by the Redis clock (compute the plan again)
--@include arm
--@include fmt
--@include now_ms
--@include occ_add
--@include rec_job
--@include rec_key

local R = rec_key(ARGV[2])
local f = redis.call('HMGET', R, 'g', 'at', 'end', 'ps')
local now = now_ms()
if not f[1] then return {0, now, 0, 0, 0} end
if tonumber(f[1]) ~= tonumber(ARGV[3]) or tonumber(f[2]) ~= tonumber(ARGV[4]) or f[3] or f[4] then
  local e = 0
  if f[3] or f[4] then e = 1 end
  return {0, now, tonumber(f[1]), tonumber(f[2]), e}
end
if tonumber(f[2]) > now then return {2, now} end
if ARGV[5] ~= '' and tonumber(ARGV[5]) > now then return {3, now} end
local k = (#ARGV - 6) / 3
local ex = {}
for i = 1, k do ex[i] = redis.call('EXISTS', ARGV[1] .. ARGV[6 + 3 * i]) end
local p, jf = nil, nil
local mems, pv, last, lastid = {}, tonumber(f[2]), nil, nil
for i = 1, k do
  local occ, due, id = tonumber(ARGV[4 + 3 * i]), tonumber(ARGV[5 + 3 * i]), ARGV[6 + 3 * i]
  if ex[i] == 0 then
    if not p then p, jf = redis.call('HGET', R, 'p') or '', rec_job(R, true) end
    mems[occ_add(id, due, p, now, jf)] = true
  end
  if last then pv = last end
  last, lastid = occ, id
end
if last then
  redis.call('HSET', R, 'at', fmt(last), 'id', lastid, 'pv', fmt(pv))
  arm(mems)
end
if ARGV[6] == '1' then redis.call('HSET', R, 'end', '1') end
return {1, now}
