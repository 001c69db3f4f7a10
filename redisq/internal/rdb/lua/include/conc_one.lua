-- conc_one(c, cq) decides, for a due item of a key whose limit is c (its
-- conc_read; cq: the item's field), whether it may be leased (true) or
-- waits for a place. An item given a place keeps it unless the limit was
-- lowered below the places taken; then it waits again, first. Reads only.

local function conc_one(c, cq)
  if cq == '2' then
    if c.used <= c.k then return true end
    c.used, c.queued = c.used - 1, c.queued + 1
    return false
  end
  if c.used < c.k and c.queued == 0 then
    c.used = c.used + 1
    return true
  end
  c.queued = c.queued + 1
  return false
end
