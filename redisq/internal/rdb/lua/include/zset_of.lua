-- zset_of(st) is the zset of the items of state st: s, l, c, or d.
--@include keys

local function zset_of(st)
  if st == 's' then return K_SCHED elseif st == 'l' then return K_LEASE elseif st == 'c' then return K_DONE end
  return K_DEAD
end
