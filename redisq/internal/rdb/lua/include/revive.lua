-- revive(h, id, mem, now, st): a dead (or, with st 'c', completed) item
-- goes back to sched, due now, with attempts reset.
--@include keys
--@include unsched
--@include to_sched

local function revive(h, id, mem, now, st)
  unsched(h, st or 'd', mem)
  to_sched(h, id, now)
  redis.call('HINCRBY', K_STATS, 'requeued', 1)
end
