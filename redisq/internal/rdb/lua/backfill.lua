-- backfill: enqueues the item of each occurrence given, due now (in their
-- order), with the registration's payload and job but not its occurrence
-- policy, unless the item exists.
--
-- KEYS[1] -> {dq:NAME}:sched
-- KEYS[2] -> {dq:NAME}:seq
-- KEYS[3] -> {dq:NAME}:wake
-- KEYS[4] -> {dq:NAME}:stats
-- KEYS[5] -> {dq:NAME}:rec:REG, the registration's hash
-- KEYS[6...] -> {dq:NAME}:m:ID, the item of each occurrence
-- ARGV[1] -> {dq:NAME}:m:, the item hash prefix
-- ARGV[2] -> the registration's name
-- ARGV[3] -> the generation the occurrences were computed at
-- ARGV[4...] -> per occurrence, increasing: the occurrence (ms) and its
--   item id
-- Output: {1, now, enqueued, existing}; {0, now, g, at} when the
--   registration is not at that generation (g 0: it is gone), or one of
--   the occurrences is not before its watermark at or has not come, and
--   nothing is done
--@include arm
--@include now_ms
--@include occ_add
--@include rec_job
--@include rec_key

local R = rec_key(ARGV[2])
local f = redis.call('HMGET', R, 'g', 'at')
local now = now_ms()
if not f[1] then return {0, now, 0, 0} end
local k = (#ARGV - 3) / 2
-- The occurrences are increasing: the last must be before the watermark
-- and have come.
if tonumber(f[1]) ~= tonumber(ARGV[3]) or (k > 0 and (tonumber(ARGV[2 + 2 * k]) >= tonumber(f[2]) or tonumber(ARGV[2 + 2 * k]) > now)) then
  return {0, now, tonumber(f[1]), tonumber(f[2])}
end
local ex = {}
for i = 1, k do ex[i] = redis.call('EXISTS', ARGV[1] .. ARGV[3 + 2 * i]) end
local p, jf = nil, nil
local mems, added = {}, 0
for i = 1, k do
  if ex[i] == 0 then
    if not p then p, jf = redis.call('HGET', R, 'p') or '', rec_job(R) end
    mems[occ_add(ARGV[3 + 2 * i], now, p, now, jf)] = true
    added = added + 1
  end
end
arm(mems)
return {1, now, added, k - added}
