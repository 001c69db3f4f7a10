-- done_gone(r) stores the reply r of a call that deleted the item (see
-- rid_key), and returns it.
--@include rid_key
--@include enc

local function done_gone(r)
  redis.call('SET', rid_key(), enc(r), 'PX', {{TOMB_MS}})
  return r
end
