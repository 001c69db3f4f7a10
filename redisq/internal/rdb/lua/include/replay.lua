-- replay(rq, rr, gone) returns the stored reply of this call's first run,
-- or nil (see rid_key): rq and rr are the item's fields (nil when the item
-- is gone, which gone says: then the reply key is read).
--@include rid_key

local function dec(v)
  local r = {}
  for x in string.gmatch(v, '[^,]+') do r[#r + 1] = tonumber(x) end
  return r
end
local function replay(rq, rr, gone)
  if rq == ARGV[#ARGV] and rr then return dec(rr) end
  if gone then
    local v = redis.call('GET', rid_key())
    if v then return dec(v) end
  end
  return nil
end
