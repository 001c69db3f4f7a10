-- append_item(out, id, score, withp): it appends one item's fields to out
-- in the order itemStride (inspect.go) documents, and returns the indexes
-- of its payload's size and of its result's. The lease token is never
-- read.

local function append_item(out, id, score, withp)
  local h = ARGV[1] .. id
  local f = redis.call('HMGET', h, 'st', 'due', 'att', 'dl', 'enq', 'can', 'why', 'wt', 'cq', 'fin')
  out[#out + 1] = id
  out[#out + 1] = score
  for i = 1, 7 do out[#out + 1] = f[i] or '' end
  local at = #out + 1
  out[at] = redis.call('HSTRLEN', h, 'p')
  if withp then out[#out + 1] = redis.call('HGET', h, 'p') or '' else out[#out + 1] = '' end
  for _, v in ipairs(redis.call('HMGET', h, {{JOB_FIELDS}})) do out[#out + 1] = v or '' end
  out[#out + 1] = f[10] or ''
  local rat = #out + 1
  out[rat] = redis.call('HSTRLEN', h, 'res')
  if withp then out[#out + 1] = redis.call('HGET', h, 'res') or '' else out[#out + 1] = '' end
  out[#out + 1] = f[8] or ''
  out[#out + 1] = f[9] or ''
  return at, rat
end
