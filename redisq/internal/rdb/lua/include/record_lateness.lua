-- record_lateness(due, k, now) adds the deliveries of one claim (the first
-- k members of due, a WITHSCORES reply) to the histogram in K_LATE, with
-- one HINCRBY per bucket touched and one for a non-zero sum.
-- O(k·buckets) in Lua.
--
-- It cannot fail, so a claim never errors after leasing: each lateness is
-- capped at LATE_CAP, numbers go to Redis formatted "%d" (never "1e+17"),
-- and the sum saturates at the int64 maximum instead of failing HINCRBY
-- with an overflow (redis.pcall; no extra command unless it overflows).
--@include keys

local late_bounds = {{{LATE_BOUNDS}}}
local function record_lateness(due, k, now)
  local nb = #late_bounds
  -- lo and hi: the first and last bucket touched.
  local counts, sum, lo, hi = {}, 0, nb + 1, 1
  for i = 2, 2 * k, 2 do
    local l = now - tonumber(due[i])
    if l < 0 then l = 0 end
    if l > {{LATE_CAP}} then l = {{LATE_CAP}} end
    sum = sum + l
    local b = nb + 1
    for j = 1, nb do
      if l <= late_bounds[j] then b = j; break end
    end
    counts[b] = (counts[b] or 0) + 1
    if b < lo then lo = b end
    if b > hi then hi = b end
  end
  for j = lo, hi do
    if counts[j] then
      local f = 'inf'
      if j <= nb then f = string.format('%d', late_bounds[j]) end
      redis.call('HINCRBY', K_LATE, f, string.format('%d', counts[j]))
    end
  end
  if sum > 0 then
    local r = redis.pcall('HINCRBY', K_LATE, 'sum', string.format('%d', sum))
    if type(r) == 'table' and r.err then redis.call('HSET', K_LATE, 'sum', '{{INT64_MAX}}') end
  end
end
