-- dead-letter: ARGV[2] id, ARGV[3] token, ARGV[4] reason, ARGV[5] request
-- id. {0} lease lost, {2} dead-lettered, {3} deleted because it was cancelled
-- while in flight; a rerun of the same request returns the first run's reply.
--
-- KEYS: lease, dead, stats, seq; the item's hash and the request's reply key
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
