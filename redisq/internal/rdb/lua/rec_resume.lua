-- rec_resume: resumes a paused registration: the occurrence given is
-- enqueued (unless its item exists) and becomes the watermark, so keepers
-- go on from it; the occurrences of the pause are skipped.
--
-- KEYS[1] -> {dq:NAME}:sched
-- KEYS[2] -> {dq:NAME}:wake
-- KEYS[3] -> {dq:NAME}:stats
-- KEYS[4] -> {dq:NAME}:seq
-- KEYS[5] -> {dq:NAME}:rec:REG, the registration's hash
-- KEYS[6] -> {dq:NAME}:recx
-- KEYS[7...] -> {dq:NAME}:m:ID, the item of ARGV[4], when there is one
-- ARGV[1] -> {dq:NAME}:m:, the item hash prefix
-- ARGV[2] -> the name
-- ARGV[3] -> the schedule's first occurrence after now (ms; "" when it
--   has none)
-- ARGV[4] -> its item id
-- ARGV[5] -> when that item is due
-- ARGV[6] -> the request id
-- Output: {0} not found, {2} not paused, {5, at} retry (the occurrence
--   given is not after the last one that has come, at: compute it after
--   at), {1} resumed; a rerun of the request returns its first reply
--@include arm
--@include changed
--@include enc
--@include fmt
--@include now_ms
--@include occ_add
--@include rec_job
--@include rec_key
--@include replay

local R = rec_key(ARGV[2])
local f = redis.call('HMGET', R, 'g', 'at', 'ps', 'rq', 'rr')
local again = replay(f[4], f[5], false)
if again then return again end
if not f[1] then return {0} end
if not f[3] then return {2} end
local now = now_ms()
local hs = {'g', fmt(tonumber(f[1]) + 1), 'rq', ARGV[#ARGV], 'rr', enc({1})}
if ARGV[3] ~= '' then
  local first, at = tonumber(ARGV[3]), tonumber(f[2])
  if at <= now then
    if first <= at then return {5, at} end
    hs[#hs + 1] = 'pv'
    hs[#hs + 1] = fmt(at)
  end
  if redis.call('EXISTS', ARGV[1] .. ARGV[4]) == 0 then
    local m = {}
    m[occ_add(ARGV[4], tonumber(ARGV[5]), redis.call('HGET', R, 'p') or '', now, rec_job(R, true))] = true
    arm(m)
  end
  for _, v in ipairs({'at', fmt(first), 'id', ARGV[4]}) do hs[#hs + 1] = v end
end
redis.call('HSET', R, unpack(hs))
redis.call('HDEL', R, 'ps')
changed(ARGV[2])
return {1}
