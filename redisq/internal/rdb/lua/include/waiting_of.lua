-- An item waiting for its rate slot (see rate_read) has the field wt and
-- its member in its limit key's waiting indexes, rw:KEY (and rx:KEY while
-- a change of limit lets them go); one waiting for a place under a
-- concurrency limit, or given one, has the field cq and its member in
-- cq:KEY or cp:KEY (see conc_keys). A script that takes a scheduled item
-- out of sched calls waiting_of(h) with its reads, before its first write,
-- since it reads the indexes, found while running: it returns the item's
-- indexes, or nil when the item waits for nothing. waiting_end then takes
-- the item out of them.
--@include limit_key
--@include conc_of

local function waiting_of(h)
  local wt, lk, cq = unpack(redis.call('HMGET', h, 'wt', 'lk', 'cq'))
  if not wt and not cq then return nil end
  local key = lk or ''
  local w = {limit_key('rw', key), limit_key('rx', key)}
  redis.call('EXISTS', w[1], w[2])
  if cq then w.c = conc_of(h, cq) end
  return w
end
