-- ack many and claim: acks leases as ack does, each in turn, then claims
-- as claim does, whatever the acks found. The handlers of a Worker that
-- finish together in a backlog each ack their message and claim the next
-- in one round trip, one TIME and one claim (see claimNext), instead of
-- one each.
--
-- KEYS[1] -> {dq:NAME}:sched
-- KEYS[2] -> {dq:NAME}:lease
-- KEYS[3] -> {dq:NAME}:dead
-- KEYS[4] -> {dq:NAME}:wake
-- KEYS[5] -> {dq:NAME}:stats
-- KEYS[6] -> {dq:NAME}:seq
-- KEYS[7] -> {dq:NAME}:timer
-- KEYS[8] -> {dq:NAME}:late
-- KEYS[9...] -> per ack {dq:NAME}:m:ID, its item's hash, and
--   {dq:NAME}:a:TOKEN, its lease's tombstone
-- ARGV[1] -> {dq:NAME}:m:, the item hash prefix
-- ARGV[2] -> n, as claim's ARGV[2]
-- ARGV[3] -> visibility µs, as claim's
-- ARGV[4] -> max attempts, as claim's
-- ARGV[5] -> backoff base µs, as claim's
-- ARGV[6] -> backoff max µs, as claim's
-- ARGV[7] -> reclaim batch, as claim's
-- ARGV[8] -> the caller's timer id, as claim's
-- ARGV[9] -> "1" when the caller watches, as claim's
-- ARGV[10...] -> per ack the lease's id, its token and its result, as
--   ack's
-- Output: as claim, then one entry per ack, in order: 1 acked (or already
--   acked: its tombstone), 0 lease lost
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
return claim_due(now, frac, acked)
