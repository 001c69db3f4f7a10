-- ack and claim: acks a lease as ack does, then claims as claim does: one
-- round trip and one TIME for a consumer's Ack and its next Take.
--
-- KEYS[1] -> {dq:NAME}:sched
-- KEYS[2] -> {dq:NAME}:lease
-- KEYS[3] -> {dq:NAME}:dead
-- KEYS[4] -> {dq:NAME}:wake
-- KEYS[5] -> {dq:NAME}:stats
-- KEYS[6] -> {dq:NAME}:seq
-- KEYS[7] -> {dq:NAME}:timer
-- KEYS[8] -> {dq:NAME}:late
-- KEYS[9] -> {dq:NAME}:m:ID, the acked item's hash
-- KEYS[10] -> {dq:NAME}:a:TOKEN, its lease's tombstone
-- ARGV[1] -> {dq:NAME}:m:, the item hash prefix
-- ARGV[2] -> n, as claim's ARGV[2]
-- ARGV[3] -> visibility µs, as claim's
-- ARGV[4] -> max attempts, as claim's
-- ARGV[5] -> backoff base µs, as claim's
-- ARGV[6] -> backoff max µs, as claim's
-- ARGV[7] -> reclaim batch, as claim's
-- ARGV[8] -> the caller's timer id, as claim's
-- ARGV[9] -> "1" when the caller watches, as claim's
-- ARGV[10] -> the id of the lease to ack first
-- ARGV[11] -> its token
-- ARGV[12] -> its result, as ack's ARGV[4]
-- Output: {now, -2, 0} when that lease is lost (nothing is claimed), else
--   as claim
--@include ack_one
--@include claim_due
--@include now_ms

local now, frac = now_ms()
if ack_one(ARGV[10], ARGV[11], now, ARGV[12]) == 0 then return {now, -2, 0} end
return claim_due(now, frac)
