-- occ_skipped(r, id, why) records a skip of occurrence id of r (its
-- occ_read) for why.

local function occ_skipped(r, id, why)
  r.skips = r.skips + 1
  r.last, r.why = id, why
end
