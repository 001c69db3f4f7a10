-- revive(h, id, mem, now): a dead item goes back to
-- sched, due now, with attempts reset.

local function revive(h, id, mem, now)
  unsched(h, 'd', mem)
  to_sched(h, id, now)
  redis.call('HINCRBY', K_STATS, 'requeued', 1)
end
