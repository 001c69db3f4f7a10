-- backoff(att, base, max) is the delay (µs) before the retry of attempt
-- att: base doubling per attempt, at most max.

local function backoff(att, base, max)
  if base <= 0 or att < 1 then return 0 end
  local d = base
  for _ = 2, att do
    d = d * 2
    if d >= max then return max end
  end
  if d > max then d = max end
  return d
end
