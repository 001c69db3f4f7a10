-- ack_one(id, tok, now): 1 when it acked the lease tok of
-- item id (or an ack of it already ran: its tombstone is there), 0 when the
-- lease is lost.

local function ack_one(id, tok, now)
  local h = ARGV[1] .. id
  local tomb = string.sub(ARGV[1], 1, -3) .. 'a:' .. tok
  local f = redis.call('HMGET', h, 'st', 'tok', 'dl', 'mem')
  if f[1] ~= 'l' or f[2] ~= tok or tonumber(f[3]) <= now then
    if redis.call('EXISTS', tomb) == 1 then return 1 end
    return 0
  end
  redis.call('ZREM', K_LEASE, f[4])
  redis.call('DEL', h)
  redis.call('HINCRBY', K_STATS, 'acked', 1)
  redis.call('SET', tomb, '1', 'PX', {{TOMB_MS}})
  return 1
end
