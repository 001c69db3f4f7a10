-- ack many and claim: the claim's ARGV[2..9], then from ARGV[10] triples of
-- id, token and result of leases to ack first, each as ack. Returns as
-- claim, then one entry per ack, in order: 1 acked (or already acked: its
-- tombstone), 0 lease lost. The claim runs whatever the acks found. The
-- handlers of a Worker that finish together in a backlog each ack their
-- message and claim the next in one round trip, one TIME and one claim
-- (see claimNext), instead of one each.
--
-- KEYS: sched, lease, dead, wake, stats, seq, timer, late; per ack, its
--   item's hash and its lease's tombstone
--@include ack_one
--@include claim_due
--@include now_ms

local now, frac = now_ms()
-- Each ack reads its keys after the acks before it wrote: a key moved
-- away mid-migration stops the script after whole acks only, and the
-- call run again finds their tombstones (as ack_claim, whose claim reads
-- after its ack wrote).
local acked = {}
for j = 10, #ARGV, 3 do acked[#acked + 1] = ack_one(ARGV[j], ARGV[j + 1], now, ARGV[j + 2]) end
local out = claim_due(now, frac)
for _, a in ipairs(acked) do out[#out + 1] = a end
return out
