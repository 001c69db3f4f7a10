-- conc_end(c, h, mem, now) frees the place of the lease of member mem (h
-- its hash, or nil when the item is gone), c its conc_of.
--@include conc_promote

local function conc_end(c, h, mem, now)
  if not c then return end
  redis.call('ZREM', c.F, mem)
  if h then redis.call('HDEL', h, 'cf') end
  conc_promote(c, now)
end
