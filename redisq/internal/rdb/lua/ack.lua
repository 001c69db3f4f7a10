-- ack: ARGV[2] id, ARGV[3] token, ARGV[4] the result to keep if the item
-- is retained (see complete). {1} acked, {0} lease lost.
--
-- A successful ack leaves a tombstone {dq:NAME}:a:TOKEN for TombstoneMS,
-- so an ack that is run again (go-redis retries a script whose reply was
-- lost to a timeout) reports success instead of ErrLeaseLost. Lease tokens
-- are unique per lease, so the tombstone answers for exactly this lease.
--
-- KEYS: lease, stats; the item's hash and the lease's tombstone (done,
--   touched only for a retained item, is read first)
--@include ack_one
--@include now_ms

local now = now_ms()
return {ack_one(ARGV[2], ARGV[3], now, ARGV[4])}
