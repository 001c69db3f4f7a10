-- conc_undo(c, cq) takes back conc_one's place for an item that is not
-- leased after all (a rate limit holds it): one given a place keeps it.

local function conc_undo(c, cq)
  if cq ~= '2' then c.used = c.used - 1 end
end
