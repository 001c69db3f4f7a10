-- sched_new(h, id, due, ...) puts an item (already removed from its zset,
-- or new) in sched at due under a new member; extra arguments are more
-- hash fields and values to set. Returns the member.
--@include keys
--@include new_member
--@include arm_if_head

local function sched_new(h, id, due, ...)
  local mem = new_member(id)
  redis.call('ZADD', K_SCHED, due, mem)
  redis.call('HSET', h, 'st', 's', 'due', due, 'mem', mem, 'tok', '', 'dl', 0, ...)
  arm_if_head(mem)
  return mem
end
