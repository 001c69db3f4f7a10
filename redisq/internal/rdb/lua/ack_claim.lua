-- ack and claim: the claim's ARGV[2..9], then ARGV[10] id, ARGV[11] token
-- and ARGV[12] result of a lease to ack first, as ack. Returns {now, -2, 0} when that
-- lease is lost (nothing is claimed), else as claim: one round trip and one
-- TIME for a consumer's Ack and its next Take.
--
-- KEYS: sched, lease, dead, wake, stats, seq, timer, late; the acked item's
--   hash and its lease's tombstone
--@include ack_one
--@include claim_due
--@include now_ms

local now, frac = now_ms()
if ack_one(ARGV[10], ARGV[11], now, ARGV[12]) == 0 then return {now, -2, 0} end
return claim_due(now, frac)
