-- unregister: ARGV[2] name, ARGV[3] request id.
-- Returns {0} not found, {1, c} removed, c 1 when the item of the last
-- occurrence enqueued was scheduled and is cancelled; a rerun of the
-- request returns its first reply.
--
-- KEYS: sched, stats; the registration's hash, recs, recx, and the request's
--   reply key
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
