-- lease check shared by nack and dead-letter: returns {0} when the caller's
-- token no longer owns a live lease, unless this call (its request id, the
-- last argument) already ran: then its first reply. f holds the item's
-- fields st, tok, dl, mem, att, can, rq, rr, ma, bb, bx, cf.

local h = ARGV[1] .. ARGV[2]
local f = redis.call('HMGET', h, 'st', 'tok', 'dl', 'mem', 'att', 'can', 'rq', 'rr', 'ma', 'bb', 'bx', 'cf')
local now, frac = now_ms()
if f[1] ~= 'l' or f[2] ~= ARGV[3] or tonumber(f[3]) <= now then
  return replay(f[7], f[8], not f[1]) or {0}
end
