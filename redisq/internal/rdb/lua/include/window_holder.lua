-- window_holder(key) is the id, member and waiting_of of the scheduled
-- item holding key's window (see unique_take), or nil. It reads that
-- item's hash, found while running.
--@include keys
--@include waiting_of

local function window_holder(key)
  local id = redis.call('GET', K_PREFIX .. 'u:' .. key)
  if not id then return nil end
  local f = redis.call('HMGET', ARGV[1] .. id, 'st', 'mem')
  if f[1] ~= 's' then return nil end
  return id, f[2], waiting_of(ARGV[1] .. id)
end
