-- reclaim_expired(now, frac) returns up to ARGV[7] (at most ScriptBatch)
-- expired leases of the claim (see claim_due) to sched, with their
-- backoff, or to dead at their max attempts (ARGV[4..6] the defaults of an
-- item that has none of its own); a lease cancelled in flight is deleted.
-- Returns whether it took a whole batch (more may have expired).
--@include keys
--@include conc_of
--@include conc_end
--@include policy
--@include to_dead
--@include to_sched
--@include after
--@include backoff

local function reclaim_expired(now, frac)
  local mp = ARGV[1]
  local maxatt = tonumber(ARGV[4])
  local base = tonumber(ARGV[5])
  local bmax = tonumber(ARGV[6])
  local rb = math.min(tonumber(ARGV[7]), {{SCRIPT_BATCH}})
  local exp = redis.call('ZRANGEBYSCORE', K_LEASE, '-inf', now, 'LIMIT', 0, rb)
  -- Every item hash is read before the first write (see keys.lua).
  local fs = {}
  for i, mem in ipairs(exp) do
    local h = mp .. string.sub(mem, 18)
    local att, can, ma, bb, bx, cf = unpack(redis.call('HMGET', h, 'att', 'can', 'ma', 'bb', 'bx', 'cf'))
    fs[i] = {att = att, can = can, ma = ma, bb = bb, bx = bx, c = conc_of(h, cf)}
  end
  for i, mem in ipairs(exp) do
    local id = string.sub(mem, 18)
    local h = mp .. id
    local f = fs[i]
    redis.call('ZREM', K_LEASE, mem)
    -- An expired lease frees its place (see conc_of).
    conc_end(f.c, h, mem, now)
    local att = tonumber(f.att) or 0
    local ma, bb, bx = policy(f.ma, f.bb, f.bx, maxatt, base, bmax)
    if f.can == '1' then
      redis.call('DEL', h)
      redis.call('HINCRBY', K_STATS, 'cancelled', 1)
    elseif ma > 0 and att >= ma then
      to_dead(h, mem, now, 'max attempts: lease expired')
    else
      to_sched(h, id, after(now, frac, backoff(att, bb, bx)))
      redis.call('HINCRBY', K_STATS, 'expired', 1)
    end
  end
  return #exp == rb
end
