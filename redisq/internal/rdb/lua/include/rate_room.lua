-- rate_room(l, nowus) is when l's window (see rate_read, queue_rate_read)
-- next has room for a claim (µs), for a claim at nowus that found it full:
-- when the claim of rank cnt - N in it (this claim's own are the last, at
-- nowus) is PER old.

local function rate_room(l, nowus)
  if l.room == nil then
    local r, t = l.cnt - l.n, nowus
    if r < l.c0 then
      t = tonumber(redis.call('ZRANGE', l.L, '(' .. l.lo, '+inf', 'BYSCORE', 'LIMIT', r, 1, 'WITHSCORES')[2]) or nowus
    end
    l.room = t + l.per
  end
  return l.room
end
