-- unregister: removes a registration, and the item of its last occurrence
-- enqueued if it is scheduled, which is found while running.
--
-- KEYS[1] -> {dq:NAME}:sched
-- KEYS[2] -> {dq:NAME}:stats
-- KEYS[3] -> {dq:NAME}:rec:REG, the registration's hash
-- KEYS[4] -> {dq:NAME}:recs
-- KEYS[5] -> {dq:NAME}:recx
-- KEYS[6] -> {dq:NAME}:r:RID, the request's reply
-- ARGV[1] -> {dq:NAME}:m:, the item hash prefix
-- ARGV[2] -> the name
-- ARGV[3] -> the request id
-- Output: {0} not found, {1, c} removed, c 1 when the item was
--   cancelled; a rerun of the request returns its first reply
--@include keys
--@include changed
--@include done_gone
--@include rec_key
--@include replay
--@include waiting_end
--@include waiting_of

local R = rec_key(ARGV[2])
local id = redis.call('HGET', R, 'id')
if not id then return replay(nil, nil, true) or {0} end
-- Found while running: read before the first write.
local it = redis.call('HMGET', ARGV[1] .. id, 'st', 'mem')
local c = 0
if it[1] == 's' then
  waiting_end(waiting_of(ARGV[1] .. id), nil, it[2])
  redis.call('ZREM', K_SCHED, it[2])
  redis.call('DEL', ARGV[1] .. id)
  redis.call('HINCRBY', K_STATS, 'cancelled', 1)
  c = 1
end
redis.call('DEL', R)
redis.call('ZREM', K_RECS, ARGV[2])
changed(ARGV[2])
return done_gone({1, c})
