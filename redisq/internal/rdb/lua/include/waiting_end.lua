-- waiting_end(w, h, mem, keep) takes the item of member mem out of the
-- indexes w (its waiting_of) (a waiting item made due may be leaving a
-- free place: the next one is made due) and, for an item that stays
-- (keep; h its hash), drops wt and cq, so that it waits again only if a
-- claim finds its key over a limit.
--@include conc_promote

local function waiting_end(w, h, mem, keep)
  if not w then return end
  redis.call('ZREM', w[1], mem)
  redis.call('ZREM', w[2], mem)
  if keep then redis.call('HDEL', h, 'wt', 'cq') end
  if w.c then
    redis.call('ZREM', w.c.Q, mem)
    redis.call('ZREM', w.c.P, mem)
    conc_promote(w.c)
  end
end
