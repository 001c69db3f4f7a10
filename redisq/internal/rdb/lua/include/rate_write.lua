-- rate_write(rates, now, frac) records what rate_one decided for the keys
-- of rates (see rate_read): the claims in each key's log, the waiting
-- items in its index.
--@include rate_successors

local function rate_write(rates, now, frac)
  local nowus = now * 1000 + frac
  local ts = string.format('%d', nowus)
  for _, l in pairs(rates) do
    if l then
      if #l.adm > 0 then
        local z = {}
        for i, mem in ipairs(l.adm) do z[2 * i - 1] = ts; z[2 * i] = mem end
        redis.call('ZREMRANGEBYSCORE', l.L, '-inf', l.lo)
        redis.call('ZADD', l.L, unpack(z))
        redis.call('PEXPIRE', l.L, math.ceil(l.per / 1000) + 1)
      end
      if #l.gone > 0 then redis.call('ZREM', l.W, unpack(l.gone)) end
      if #l.wake > 0 then redis.call('ZADD', l.W, unpack(l.wake)) end
      if #l.adm > 0 then rate_successors(l, #l.adm, nowus) end
      if l.set then
        redis.call('SET', l.R, string.format('%d', l.again), 'PX', math.ceil((l.again - nowus) / 1000) + 1)
      end
    end
  end
end
