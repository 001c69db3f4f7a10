-- dead-letter: dead-letters a lease (to_dead).
--
-- KEYS[1] -> {dq:NAME}:lease
-- KEYS[2] -> {dq:NAME}:dead
-- KEYS[3] -> {dq:NAME}:stats
-- KEYS[4] -> {dq:NAME}:seq
-- KEYS[5] -> {dq:NAME}:m:ID, the item's hash
-- KEYS[6] -> {dq:NAME}:r:RID, the request's reply
-- ARGV[1] -> {dq:NAME}:m:, the item hash prefix
-- ARGV[2] -> the id
-- ARGV[3] -> the lease's token
-- ARGV[4] -> the reason
-- ARGV[5] -> the request id
-- Output: {0} lease lost, {2} dead-lettered, {3} deleted because it was
--   cancelled while in flight; a rerun of the same request returns the
--   first run's reply
--@include keys
--@include conc_end
--@include conc_of
--@include done_gone
--@include lease_read
--@include replay
--@include to_dead

local h = ARGV[1] .. ARGV[2]
local lost, now, _, mem, can, cf = lease_read(h, ARGV[3], 'mem', 'can', 'cf')
if lost then return replay(lost.rq, lost.rr, not lost.st) or {0} end
local c = conc_of(h, cf)
redis.call('ZREM', K_LEASE, mem)
conc_end(c, h, mem, now)
if can == '1' then
  redis.call('DEL', h)
  redis.call('HINCRBY', K_STATS, 'cancelled', 1)
  return done_gone({3})
end
to_dead(h, mem, now, ARGV[4], 'rq', ARGV[5], 'rr', '2')
return {2}
