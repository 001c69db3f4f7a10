-- after(now, frac, d) is the first whole ms at or after now (ms) + frac
-- (µs) + d (µs), at most MAXDUE (see now_ms).
--
-- Numbers passed to redis.call are formatted with "%.17g", so any value of
-- 1e17 or more would reach Redis as "1e+17", which integer arguments (SET
-- PX) reject. Scores are clamped to MAXDUE (2^53-1 ms, the largest integer
-- a Lua number holds exactly, about year 287,000).

local function after(now, frac, d)
  local due = now + math.floor((frac + d + 999) / 1000)
  if due > {{MAXDUE}} then due = {{MAXDUE}} end
  return due
end
