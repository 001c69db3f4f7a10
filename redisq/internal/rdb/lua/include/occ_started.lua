-- occ_started(r, id, mem, dl) records that the claim leases occurrence id
-- of r (its occ_read; mem its member) until dl, under Overlap: the later
-- starts of this claim see it run.

local function occ_started(r, id, mem, dl)
  r.live[id], r.add[#r.add + 1] = true, mem
  if not r.dl or dl > r.dl then r.dl = dl end
end
