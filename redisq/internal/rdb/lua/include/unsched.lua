-- unsched(h, st, mem, w) takes a scheduled, dead or completed item out of
-- its zset, for to_sched; a dead or completed item is revived: attempts
-- reset, reason or result dropped. w is a scheduled item's waiting_of.
--@include keys
--@include waiting_end

local function unsched(h, st, mem, w)
  -- An operator's move of a recurring occurrence (see occ_read) runs it:
  -- its registration's occurrence policy no longer applies.
  redis.call('HDEL', h, 'op')
  if st == 's' then
    redis.call('ZREM', K_SCHED, mem)
    waiting_end(w, h, mem, true)
  elseif st == 'c' then
    -- A completed item runs again: it no longer expires.
    redis.call('ZREM', K_DONE, mem)
    redis.call('PERSIST', h)
    redis.call('HSET', h, 'att', 0)
    redis.call('HDEL', h, 'fin', 'res')
  else
    redis.call('ZREM', K_DEAD, mem)
    redis.call('HSET', h, 'att', 0)
    redis.call('HDEL', h, 'why')
  end
end
