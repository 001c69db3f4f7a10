-- register: creates, changes or confirms a registration. An update
-- cancels the item of the last occurrence enqueued if it is still
-- scheduled and not yet due (that occurrence of the old registration has
-- not come), and keeps the watermark's promise: an occurrence that has
-- come is never enqueued again. A rerun of the request returns its first
-- reply (rq, rr in the registration's hash).
--
-- KEYS[1] -> {dq:NAME}:sched
-- KEYS[2] -> {dq:NAME}:wake
-- KEYS[3] -> {dq:NAME}:stats
-- KEYS[4] -> {dq:NAME}:seq
-- KEYS[5] -> {dq:NAME}:rec:REG, the registration's hash
-- KEYS[6] -> {dq:NAME}:recs
-- KEYS[7] -> {dq:NAME}:recx
-- KEYS[8] -> {dq:NAME}:m:ID, the item of ARGV[8]
-- KEYS[9] -> {dq:NAME}:m:ID, the item of ARGV[10]
-- ARGV[1] -> {dq:NAME}:m:, the item hash prefix
-- ARGV[2] -> the name
-- ARGV[3] -> the schedule's text
-- ARGV[4] -> the payload
-- ARGV[5] -> the catch-up bound
-- ARGV[6] -> the version
-- ARGV[7] -> the first occurrence (ms) if the registration is new
-- ARGV[8] -> its item id
-- ARGV[9] -> the first occurrence after now if it exists
-- ARGV[10] -> its item id
-- ARGV[11] -> when the item of ARGV[7] is due (the occurrence, or later
--   for a jittered schedule)
-- ARGV[12] -> when the item of ARGV[9] is due
-- ARGV[13...] -> the job of every occurrence (job_fields), then the
--   request id
-- Output: {code, now, at, x}: 1 created or 2 updated (at the first
--   occurrence), 3 unchanged, 4 stale (x the stored version), 5 retry (the
--   first occurrence given is not after the last one that has come, x:
--   compute it again after x)
--@include keys
--@include arm
--@include changed
--@include enc
--@include fmt
--@include job_fields
--@include now_ms
--@include occ_add
--@include rec_job
--@include rec_key
--@include replay

local R = rec_key(ARGV[2])
local f = redis.call('HMGET', R, 's', 'p', 'cu', 'v', 'g', 'id', 'at', 'pv', 'rq', 'rr', 'ps')
-- A paused registration (rec_pause) that changes stays paused: its
-- definition is replaced, nothing is enqueued, its watermark stays.
local paused = f[11]
local jf = job_fields(13, {})
-- same_job: the stored job is the one given.
local function same_job()
  local old = rec_job(R, true)
  if #old ~= #jf then return false end
  local want = {}
  for i = 1, #jf, 2 do want[jf[i]] = jf[i + 1] end
  for i = 1, #old, 2 do if want[old[i]] ~= old[i + 1] then return false end end
  return true
end
local now = now_ms()
local again = replay(f[9], f[10], false)
if again then return {again[1], now, again[2], 0} end
local code, first, fid, fdue, g, pv = 1, tonumber(ARGV[7]), ARGV[8], tonumber(ARGV[11]), 1, nil
local old = nil
if f[1] then
  local v = tonumber(f[4])
  if tonumber(ARGV[6]) < v then
    redis.call('HSET', R, 'sn', fmt(now))
    return {4, now, tonumber(f[7]), v}
  end
  if f[1] == ARGV[3] and f[2] == ARGV[4] and f[3] == ARGV[5] and same_job() then
    redis.call('HSET', R, 'sn', fmt(now))
    if tonumber(ARGV[6]) > v then redis.call('HSET', R, 'v', ARGV[6]) end
    return {3, now, tonumber(f[7]), 0}
  end
  code, first, fid, fdue, g = 2, tonumber(ARGV[9]), ARGV[10], tonumber(ARGV[12]), tonumber(f[5]) + 1
  local at = tonumber(f[7])
  if paused then
    first, fid = at, f[6]
  else
    if at <= now then
      if first <= at then return {5, now, at, at} end
      pv = at
    end
    -- Found while running: read before the first write.
    if f[6] then old = redis.call('HMGET', ARGV[1] .. f[6], 'st', 'mem', 'due') end
  end
end
local exists = paused or redis.call('EXISTS', ARGV[1] .. fid) == 1
if old and old[1] == 's' and tonumber(old[3]) > now then
  redis.call('ZREM', K_SCHED, old[2])
  redis.call('DEL', ARGV[1] .. f[6])
  redis.call('HINCRBY', K_STATS, 'cancelled', 1)
  if f[6] == fid then exists = false end
end
if not exists then
  local m = {}
  m[occ_add(fid, fdue, ARGV[4], now, jf)] = true
  arm(m)
end
redis.call('HSET', R, 's', ARGV[3], 'p', ARGV[4], 'cu', ARGV[5], 'v', ARGV[6], 'g', fmt(g), 'ut', fmt(now),
  'at', fmt(first), 'id', fid, 'sn', fmt(now), 'rq', ARGV[#ARGV], 'rr', enc({code, first}))
redis.call('HDEL', R, 'end', {{REC_FIELDS}})
if #jf > 0 then redis.call('HSET', R, unpack(jf)) end
if code == 1 then redis.call('HSET', R, 'ct', fmt(now)) end
if pv then redis.call('HSET', R, 'pv', fmt(pv)) end
redis.call('ZADD', K_RECS, 0, ARGV[2])
changed(ARGV[2])
return {code, now, first, 0}
