-- release lease: ARGV[2] id, ARGV[3] token, ARGV[4] request id. {0} lease lost,
-- {1, due} back in sched at its due time with the lease's attempt
-- uncounted, {3} deleted because it was cancelled while in flight; a rerun
-- of the same request returns the first run's reply. Neither nacked nor
-- expired is counted: the item was not tried. O(log n).
--
-- The item goes back under a new member (to_sched), as after a Nack: the
-- member's number is the next lease's token, so the consumer that released
-- it cannot settle the next lease. Its score is the due time it had, which
-- the claim did not change: it is due at once, ahead of every item due
-- after it, and behind the items due at the same millisecond.
--
-- KEYS: sched, lease, wake, stats, seq; the item's hash and the request's
--   reply key
--@include common
--@include lease

local c = conc_of(h, f[12])
redis.call('ZREM', K_LEASE, f[4])
conc_end(c, h, f[4], now)
if f[6] == '1' then
  redis.call('DEL', h)
  redis.call('HINCRBY', K_STATS, 'cancelled', 1)
  return done_gone({3})
end
local att = (tonumber(f[5]) or 1) - 1
if att < 0 then att = 0 end
local due = tonumber(redis.call('HGET', h, 'due')) or now
if due > now then due = now end
to_sched(h, ARGV[2], due, 'att', att, 'rq', ARGV[4], 'rr', enc({1, due}))
return {1, due}
