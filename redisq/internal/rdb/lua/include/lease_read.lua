-- lease_read(h, tok, ...) reads the fields st, tok, dl, rq, rr and ... of
-- item h (one HMGET), then Redis TIME (now_ms). When tok is the item's
-- lease, live at now, it returns nil, now, frac and the values of ...;
-- else the lost lease's fields {st, rq, rr}, with which a call that has a
-- request id answers its first run's reply if it already ran (replay).
--@include now_ms

local function lease_read(h, tok, ...)
  local f = redis.call('HMGET', h, 'st', 'tok', 'dl', 'rq', 'rr', ...)
  local st, ltok, dl, rq, rr = unpack(f, 1, 5)
  local now, frac = now_ms()
  if st ~= 'l' or ltok ~= tok or tonumber(dl) <= now then return {st = st, rq = rq, rr = rr} end
  return nil, now, frac, unpack(f, 6)
end
