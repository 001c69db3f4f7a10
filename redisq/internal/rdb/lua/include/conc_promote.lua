-- conc_promote(c, now) gives the free places of c's key (its conc_of) to
-- its first waiting items: each moves from cq to cp and is made due now. A
-- member no longer in sched is dropped. While the limit is being removed
-- (K 0), up to 100 waiting items go at each call, due now as items of a
-- key without a limit. Bounded: 1,000 items.
--@include keys
--@include now_ms

local function conc_promote(c, now)
  if not c.k then return end
  now = now or now_ms()
  local free = 100
  if c.k > 0 then
    free = c.k - redis.call('ZCOUNT', c.F, '(' .. string.format('%d', now), '+inf') - redis.call('ZCARD', c.P)
  end
  local woke = false
  for _ = 1, 10 do
    if free <= 0 then break end
    local ws = redis.call('ZRANGE', c.Q, 0, math.min(free, 100) - 1, 'WITHSCORES')
    if #ws == 0 then break end
    for i = 1, #ws, 2 do
      local mem = ws[i]
      local h = ARGV[1] .. string.sub(mem, 18)
      redis.call('ZREM', c.Q, mem)
      if redis.call('ZADD', K_SCHED, 'XX', 'CH', now, mem) == 1 then
        if c.k > 0 then
          redis.call('ZADD', c.P, ws[i + 1], mem)
          redis.call('HSET', h, 'cq', 2)
        else
          redis.call('HDEL', h, 'cq')
        end
        free, woke = free - 1, true
      end
    end
    if c.k == 0 then break end
  end
  if woke then redis.call('ZADD', K_WAKE, 0, 'w') end
end
