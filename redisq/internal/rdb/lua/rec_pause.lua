-- rec_pause: pauses a registration: no keeper enqueues an occurrence of it
-- until rec_resume, and the item of its last occurrence enqueued, if it
-- was scheduled and not yet due, is cancelled (one already due has come:
-- it stays). The generation moves, so that a keeper's plan made before is
-- refused. The item of its last occurrence is found while running.
--
-- KEYS[1] -> {dq:NAME}:sched
-- KEYS[2] -> {dq:NAME}:stats
-- KEYS[3] -> {dq:NAME}:rec:REG, the registration's hash
-- KEYS[4] -> {dq:NAME}:recx
-- ARGV[1] -> {dq:NAME}:m:, the item hash prefix
-- ARGV[2] -> the name
-- ARGV[3] -> the request id
-- Output: {0} not found, {2} already paused, {1, c} paused, c 1 when the
--   item was cancelled; a rerun of the request returns its first reply
--@include keys
--@include changed
--@include enc
--@include fmt
--@include now_ms
--@include rec_key
--@include replay

local R = rec_key(ARGV[2])
local f = redis.call('HMGET', R, 'g', 'id', 'ps', 'rq', 'rr')
local again = replay(f[4], f[5], false)
if again then return again end
if not f[1] then return {0} end
if f[3] then return {2} end
local now = now_ms()
-- Found while running: read before the first write.
local it = {}
if f[2] then it = redis.call('HMGET', ARGV[1] .. f[2], 'st', 'mem', 'due') end
local c = 0
if it[1] == 's' and tonumber(it[3]) > now then
  redis.call('ZREM', K_SCHED, it[2])
  redis.call('DEL', ARGV[1] .. f[2])
  redis.call('HINCRBY', K_STATS, 'cancelled', 1)
  c = 1
end
redis.call('HSET', R, 'ps', fmt(now), 'g', fmt(tonumber(f[1]) + 1), 'rq', ARGV[#ARGV], 'rr', enc({1, c}))
changed(ARGV[2])
return {1, c}
