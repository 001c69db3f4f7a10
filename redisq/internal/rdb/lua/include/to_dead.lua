-- to_dead(h, mem, now, why, ...) moves a leased/scheduled item (already
-- removed from its zset, where its member was mem) to dead, recording why
-- it died; extra arguments are more hash fields and values to set. It
-- takes a new member, so that the dead set's members are in order of death
-- (by time, then sequence) and a sequence number taken before a bulk call
-- tells the items dead before it (see scriptBulkDead); like to_sched, the
-- number is not a new item's.
--@include keys
--@include new_member

local function to_dead(h, mem, now, why, ...)
  redis.call('HINCRBY', K_SEQ, 'r', 1)
  local dm = new_member(string.sub(mem, 18))
  redis.call('ZADD', K_DEAD, now, dm)
  redis.call('HSET', h, 'st', 'd', 'mem', dm, 'tok', '', 'dl', 0, 'why', why, ...)
  redis.call('HINCRBY', K_STATS, 'dead', 1)
end
