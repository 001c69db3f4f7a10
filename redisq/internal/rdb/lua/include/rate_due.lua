-- rate_due(l, s) is when an item whose rate slot is s µs is due (ms), l
-- its key's limit (see rate_read). A limit of more than one claim per
-- RATE_GRID µs gives its waiting items slots at the ends of RATE_GRID
-- intervals: the items of one interval come due together and are claimed
-- together, a claim per group rather than one per item. Never earlier
-- than the slot computed; the log still decides each claim.

local RATE_GRID = 10000
local function rate_due(l, s)
  if math.ceil(l.per / l.n) < RATE_GRID then
    return math.ceil(s / RATE_GRID) * (RATE_GRID / 1000)
  end
  return math.ceil(s / 1000)
end
