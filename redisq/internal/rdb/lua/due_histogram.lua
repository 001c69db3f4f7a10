-- due histogram: counts the scheduled items by due time, in buckets from
-- now.
--
-- KEYS[1] -> {dq:NAME}:sched
-- ARGV[1] -> {dq:NAME}:m:, the item hash prefix
-- ARGV[2] -> the bucket width (ms)
-- ARGV[3] -> the number of buckets
-- Output: {now, overdue, c1, ..., cN, later} where ci counts due times in
--   (now+(i-1)w, now+iw]
--@include keys
--@include now_ms

local now = now_ms()
local w = tonumber(ARGV[2])
local n = tonumber(ARGV[3])
local out = {now, redis.call('ZCOUNT', K_SCHED, '-inf', now)}
for i = 1, n do
  out[#out + 1] = redis.call('ZCOUNT', K_SCHED, '(' .. string.format('%d', now + (i - 1) * w),
    string.format('%d', now + i * w))
end
out[#out + 1] = redis.call('ZCOUNT', K_SCHED, '(' .. string.format('%d', now + n * w), '+inf')
return out
