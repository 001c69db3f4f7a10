-- dead-letter: ARGV[2] id, ARGV[3] token, ARGV[4] reason, ARGV[5] request
-- id. {0} lease lost, {2} dead-lettered, {3} deleted because it was cancelled
-- while in flight; a rerun of the same request returns the first run's reply.
--
-- KEYS: lease, dead, stats, seq; the item's hash and the request's reply key
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
to_dead(h, f[4], now, ARGV[4], 'rq', ARGV[5], 'rr', '2')
return {2}
