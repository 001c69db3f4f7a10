-- append_item(out, id, score, withp): it appends one item's
-- fields to out in the order itemStride (item.go) documents. The lease token is never
-- read.

local function zset_of(st)
  if st == 's' then return K_SCHED elseif st == 'l' then return K_LEASE end
  return K_DEAD
end
local function append_item(out, id, score, withp)
  local h = ARGV[1] .. id
  local f = redis.call('HMGET', h, 'st', 'due', 'att', 'dl', 'enq', 'can', 'why')
  out[#out + 1] = id
  out[#out + 1] = score
  for i = 1, 7 do out[#out + 1] = f[i] or '' end
  out[#out + 1] = redis.call('HSTRLEN', h, 'p')
  if withp then out[#out + 1] = redis.call('HGET', h, 'p') or '' else out[#out + 1] = '' end
end
