-- clamp_due(due) is due within [-MAXDUE, MAXDUE] (see after).

local function clamp_due(due)
  if due > {{MAXDUE}} then return {{MAXDUE}} end
  if due < -{{MAXDUE}} then return -{{MAXDUE}} end
  return due
end
