-- queue rate limit: sets the queue's own rate limit, which every claim
-- counts against whatever its items' limit keys (see queue_rate_read), or
-- removes it, and wakes a consumer: those waiting for the old limit's room
-- claim under the new one.
--
-- KEYS[1] -> {dq:NAME}:seq
-- KEYS[2] -> {dq:NAME}:wake
-- ARGV[1] -> {dq:NAME}:m:, the item hash prefix
-- ARGV[2] -> N, the claims per window (0: no limit)
-- ARGV[3] -> PER, the window (µs)
-- Output: {1}
--@include keys

if ARGV[2] == '0' then
  redis.call('HDEL', K_SEQ, 'ql')
else
  redis.call('HSET', K_SEQ, 'ql', ARGV[2] .. ',' .. ARGV[3])
end
redis.call('ZADD', K_WAKE, 0, 'w')
return {1}
