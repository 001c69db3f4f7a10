-- complete(h, mem, ret, now, res): an acked item, out of its lease
-- already, whose job keeps it ret ms (field ret) stays, completed, until
-- now + ret: in K_DONE under its member, scored by that expiry, with its
-- result res and the time fin of the ack. Its hash expires then, and
-- K_DONE with its last member, so nothing is left behind whether or not
-- anything runs again; each call also removes up to 10 members whose time
-- has passed (their hashes are gone), so K_DONE holds about the items
-- kept. The caller reads K_DONE (EXISTS) before its first write: K_DONE
-- is not declared (see keys.lua).
--@include keys

local function complete(h, mem, ret, now, res)
  local e = string.format('%d', math.min(now + ret, {{MAXDUE}}))
  redis.call('HSET', h, 'st', 'c', 'tok', '', 'dl', 0, 'fin', string.format('%d', now), 'res', res)
  redis.call('PEXPIREAT', h, e)
  redis.call('ZADD', K_DONE, e, mem)
  local old = redis.call('ZRANGE', K_DONE, '-inf', string.format('%d', now), 'BYSCORE', 'LIMIT', 0, 10)
  if #old > 0 then redis.call('ZREM', K_DONE, unpack(old)) end
  local top = redis.call('ZRANGE', K_DONE, -1, -1, 'WITHSCORES')
  redis.call('PEXPIREAT', K_DONE, top[2])
end
