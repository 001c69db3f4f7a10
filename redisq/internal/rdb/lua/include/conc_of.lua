-- conc_of(h, f) reads, before the first write, what freeing the place of
-- the item h, or ending its wait, needs (f: its field cf or cq): nil when
-- it has neither (see conc_keys).
--@include keys
--@include conc_keys

local function conc_of(h, f)
  if not f then return nil end
  local key = redis.call('HGET', h, 'lk') or ''
  local c = conc_keys(key)
  c.k = tonumber(redis.call('HGET', K_CONC, key))
  redis.call('EXISTS', c.F, c.Q, c.P, K_SCHED, K_WAKE)
  return c
end
