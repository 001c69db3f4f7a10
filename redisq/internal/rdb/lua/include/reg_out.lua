-- reg_out(out, name, withp): it appends the registration
-- name's fields (name, s, cu, v, ct, ut, g, at, pv, end, id, rn, sn, ps, the
-- state and due time of the item of id, payload size, payload or an empty
-- string, the job fields, the occurrence policy op, and the skips: sk, ls,
-- lw, see occ_read) to out, or nothing when its hash is missing. Its hash
-- and that item's are found while running; the scripts using it do not
-- write.
--@include rec_key

local function reg_out(out, name, withp)
  local R = rec_key(name)
  local f = redis.call('HMGET', R, 's', 'cu', 'v', 'ct', 'ut', 'g', 'at', 'pv', 'end', 'id', 'rn', 'sn', 'ps')
  if not f[1] then return end
  out[#out + 1] = name
  for i = 1, 13 do out[#out + 1] = f[i] or '' end
  local it = {}
  if f[10] then it = redis.call('HMGET', ARGV[1] .. f[10], 'st', 'due') end
  out[#out + 1] = it[1] or ''
  out[#out + 1] = it[2] or ''
  out[#out + 1] = redis.call('HSTRLEN', R, 'p')
  if withp then out[#out + 1] = redis.call('HGET', R, 'p') or '' else out[#out + 1] = '' end
  for _, v in ipairs(redis.call('HMGET', R, {{JOB_FIELDS}})) do out[#out + 1] = v or '' end
  local o = redis.call('HMGET', R, 'op', 'sk', 'ls', 'lw')
  for i = 1, 4 do out[#out + 1] = o[i] or '' end
end
