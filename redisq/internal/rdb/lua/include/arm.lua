-- arm(mems) rings the wake marker when one of the members mems (a set:
-- member -> true) is the head of sched.
--@include keys

local function arm(mems)
  local head = redis.call('ZRANGE', K_SCHED, 0, 0)
  if head[1] and mems[head[1]] then redis.call('ZADD', K_WAKE, 0, 'w') end
end
