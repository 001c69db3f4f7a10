-- conc_leave(key, h, mem) takes a leased item (member mem, hash h) of key
-- out of the waiting items and the places given (see conc_keys), whatever
-- its key's limit now.
--@include conc_keys

local function conc_leave(key, h, mem)
  local c = conc_keys(key)
  redis.call('ZREM', c.Q, mem)
  redis.call('ZREM', c.P, mem)
  redis.call('HDEL', h, 'cq')
end
