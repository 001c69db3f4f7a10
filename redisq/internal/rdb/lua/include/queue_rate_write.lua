-- queue_rate_write(l, z, nowus) records the claims of this claim's lease
-- members (z: deadline, member pairs) in the queue's log (see
-- queue_rate_read), at nowus.

local function queue_rate_write(l, z, nowus)
  local ts, w = string.format('%d', nowus), {}
  for i = 2, #z, 2 do w[#w + 1] = ts; w[#w + 1] = z[i] end
  redis.call('ZREMRANGEBYSCORE', l.L, '-inf', l.lo)
  redis.call('ZADD', l.L, unpack(w))
  redis.call('PEXPIRE', l.L, math.ceil(l.per / 1000) + 1)
end
