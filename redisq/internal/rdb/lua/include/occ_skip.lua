-- occ_skip(overlap, window, r, id, score, now) decides whether the first
-- start of occurrence id (its occ_read) at now, due since score, is
-- skipped: 'late', 'overlap' or nil.

local function occ_skip(overlap, window, r, id, score, now)
  if window and now - score > window then return 'late' end
  if overlap then
    for x in pairs(r.live) do
      if x ~= id then return 'overlap' end
    end
  end
  return nil
end
