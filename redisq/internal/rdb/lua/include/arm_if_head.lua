-- arm_if_head(mem) rings the wake marker when mem is the head of sched.
--@include keys

local function arm_if_head(mem)
  local head = redis.call('ZRANGE', K_SCHED, 0, 0)
  if head[1] == mem then redis.call('ZADD', K_WAKE, 0, 'w') end
end
