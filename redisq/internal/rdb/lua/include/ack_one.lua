-- ack_one(id, tok, now, res): 1 when it acked the lease tok of item id (or
-- an ack of it already ran: its tombstone is there), 0 when the lease is
-- lost. An item whose job keeps it (ret) is completed with the result res
-- (complete), unless it was cancelled in flight; any other is deleted.
--@include keys
--@include conc_of
--@include conc_end
--@include complete

local function ack_one(id, tok, now, res)
  local h = ARGV[1] .. id
  local tomb = string.sub(ARGV[1], 1, -3) .. 'a:' .. tok
  local f = redis.call('HMGET', h, 'st', 'tok', 'dl', 'mem', 'ret', 'can', 'cf')
  if f[1] ~= 'l' or f[2] ~= tok or tonumber(f[3]) <= now then
    if redis.call('EXISTS', tomb) == 1 then return 1 end
    return 0
  end
  local ret = f[6] ~= '1' and tonumber(f[5])
  if ret then redis.call('EXISTS', K_DONE) end
  local c = conc_of(h, f[7])
  redis.call('ZREM', K_LEASE, f[4])
  conc_end(c, h, f[4], now)
  if ret then complete(h, f[4], ret, now, res or '') else redis.call('DEL', h) end
  redis.call('HINCRBY', K_STATS, 'acked', 1)
  redis.call('SET', tomb, '1', 'PX', {{TOMB_MS}})
  return 1
end
