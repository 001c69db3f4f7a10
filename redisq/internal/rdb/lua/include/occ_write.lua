-- occ_write(occs, now) writes what occ_started and occ_skipped recorded in
-- the states of occs (see occ_read).
--@include keys

local function occ_write(occs, now)
  local n = 0
  for _, r in pairs(occs) do
    n = n + r.skips
    if #r.stale > 0 then redis.call('SREM', r.RN, unpack(r.stale)) end
    if #r.add > 0 then
      redis.call('SADD', r.RN, unpack(r.add))
      local ttl = r.dl - now + 60000
      if redis.call('PTTL', r.RN) < ttl then redis.call('PEXPIRE', r.RN, ttl) end
    end
    if r.exists and r.skips > 0 then
      redis.call('HINCRBY', r.R, 'sk', r.skips)
      redis.call('HSET', r.R, 'ls', r.last, 'lw', r.why)
    end
  end
  if n > 0 then redis.call('HINCRBY', K_STATS, 'skipped', n) end
end
