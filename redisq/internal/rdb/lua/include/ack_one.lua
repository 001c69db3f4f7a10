-- ack_one(id, token, now, res): 1 when it acked the lease token of item id (or
-- an ack of it already ran: its tombstone is there), 0 when the lease is
-- lost. An item whose job keeps it (ret) is completed with the result res
-- (complete), unless it was cancelled in flight; any other is deleted.
--@include keys
--@include conc_of
--@include conc_end
--@include complete

local function ack_one(id, token, now, res)
  local h = ARGV[1] .. id
  local tomb = K_PREFIX .. 'a:' .. token
  local st, tok, dl, mem, ret, can, cf = unpack(redis.call('HMGET', h, 'st', 'tok', 'dl', 'mem', 'ret', 'can', 'cf'))
  if st ~= 'l' or tok ~= token or tonumber(dl) <= now then
    if redis.call('EXISTS', tomb) == 1 then return 1 end
    return 0
  end
  ret = can ~= '1' and tonumber(ret)
  if ret then redis.call('EXISTS', K_DONE) end
  local c = conc_of(h, cf)
  redis.call('ZREM', K_LEASE, mem)
  conc_end(c, h, mem, now)
  if ret then complete(h, mem, ret, now, res or '') else redis.call('DEL', h) end
  redis.call('HINCRBY', K_STATS, 'acked', 1)
  redis.call('SET', tomb, '1', 'PX', {{TOMB_MS}})
  return 1
end
