-- limit top: the waiting items of each of a page of limit keys, for the
-- calls that list the busiest keys (redisq TopRateLimits,
-- TopConcurrencyLimits), and how many limits of the kind are set. One
-- ZCARD per zset: a page of TopPage (500) rate keys is 1000 calls, under
-- 1 ms (see TopPage in limit_top.go). Read only.
--
-- KEYS[1] -> {dq:NAME}:seq
-- KEYS[2...] -> ARGV[3] zsets per limit key, in the order of the keys:
--   rate: {dq:NAME}:rw:KEY, {dq:NAME}:rx:KEY (waiting for a slot, and
--   under an earlier limit); concurrency: {dq:NAME}:cq:KEY (waiting for
--   a place)
-- ARGV[1] -> {dq:NAME}:m:, the item hash prefix (unused)
-- ARGV[2] -> the sequence hash's field that counts the limits of the
--   kind: lim (rate) or cc (concurrency)
-- ARGV[3] -> how many zsets each key has (2 or 1)
-- Output: {the limits of the kind set (0: none), then for each key the
--   sum of its zsets' ZCARD}

local per = tonumber(ARGV[3])
local out = {tonumber(redis.call('HGET', KEYS[1], ARGV[2])) or 0}
for i = 2, #KEYS, per do
  local n = 0
  for j = i, i + per - 1 do n = n + redis.call('ZCARD', KEYS[j]) end
  out[#out + 1] = n
end
return out
