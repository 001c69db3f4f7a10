-- ack: acks one lease. A successful ack leaves a tombstone
-- {dq:NAME}:a:TOKEN for TombstoneMS, so an ack that is run again (go-redis
-- retries a script whose reply was lost to a timeout) reports success
-- instead of ErrLeaseLost. Lease tokens are unique per lease, so the
-- tombstone answers for exactly this lease. An item whose job keeps it is
-- completed (see complete): done, touched only then, is read first and not
-- declared.
--
-- KEYS[1] -> {dq:NAME}:lease
-- KEYS[2] -> {dq:NAME}:stats
-- KEYS[3] -> {dq:NAME}:m:ID, the item's hash
-- KEYS[4] -> {dq:NAME}:a:TOKEN, the lease's tombstone
-- ARGV[1] -> {dq:NAME}:m:, the item hash prefix
-- ARGV[2] -> the id
-- ARGV[3] -> the lease's token
-- ARGV[4] -> the result to keep if the item is retained
-- Output: {1} acked, {0} lease lost
--@include ack_one
--@include now_ms

local now = now_ms()
return {ack_one(ARGV[2], ARGV[3], now, ARGV[4])}
