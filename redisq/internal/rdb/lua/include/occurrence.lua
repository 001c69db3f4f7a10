-- Occurrence policies of recurring registrations (Overlap and
-- CatchUpWindow in recurring_policy.go), which the claim applies to an
-- occurrence's first start (attempts 0). An occurrence that a keeper
-- enqueued for a registration with a policy has the field op, "O,W": O is
-- "1" when it is skipped while another occurrence of its registration
-- runs (leased, the lease live), W the catch-up window in ms ("": none),
-- past which a start is skipped: more than W after the item became due
-- (its score: the occurrence, or the slot or place a limit gave it). A
-- skipped occurrence is deleted unstarted; the registration's hash counts
-- it (sk) and keeps the last one's id (ls) and why (lw: 'overlap' or
-- 'late').
--
-- Under Overlap, {dq:NAME}:rn:REG is the set of the leases of the
-- registration's occurrences (any attempt) not yet settled: each is the
-- sched member that was leased, whose first 16 bytes are the lease's
-- token. A start counts those whose item holds that lease, live, and
-- drops those whose item is gone, settled or leased again since: so an
-- item that a Backfill or RunNow makes under the id of an occurrence that
-- ran (and is not subject to the policy) is never taken for it. It
-- expires a minute after the last lease added to it ends. (Members
-- written by an earlier version are bare ids, "rec:...": counted by id.)
--
-- The registration's hash, its set and the items the set names are found
-- while running: occ_read reads them, before the claim's first write.

local OCC = {}
-- occ_read parses op, the policy of occurrence item id (nil when it is
-- not one), and reads its registration's state at now ms: {R, RN,
-- exists, live (another occurrence runs), stale (ids to drop), add (ids
-- leased now), skips}. Returns overlap, window (ms or nil), state.
local function occ_read(op, id, now)
  local o, w = string.match(op, '^(%d),(%d*)$')
  local name = string.match(id, '^rec:(.*)@[^@]*$')
  if not o or not name then return nil end
  local r = OCC[name]
  if not r then
    r = {R = K_PREFIX .. 'rec:' .. name, RN = K_PREFIX .. 'rn:' .. name, live = {}, stale = {}, add = {}, skips = 0}
    r.exists = redis.call('HEXISTS', r.R, 'g') == 1
    OCC[name] = r
  end
  if o == '1' and not r.read then
    r.read = true
    for _, x in ipairs(redis.call('SMEMBERS', r.RN)) do
      local bare = string.sub(x, 1, 4) == 'rec:'
      local xid, tok = x, nil
      if not bare then xid, tok = string.sub(x, 18), string.sub(x, 1, 16) end
      local it = redis.call('HMGET', ARGV[1] .. xid, 'st', 'dl', 'tok')
      local mine = bare or it[3] == tok
      if it[1] == 'l' and mine and tonumber(it[2]) > now then
        r.live[xid] = true
      elseif not it[1] or it[1] == 'c' or it[1] == 'd' or not mine then
        r.stale[#r.stale + 1] = x
      end
    end
  end
  return o == '1', tonumber(w), r
end
-- occ_skip decides whether the first start of occurrence id (its
-- occ_read) at now, due since score, is skipped: 'late', 'overlap' or nil.
local function occ_skip(overlap, window, r, id, score, now)
  if window and now - score > window then return 'late' end
  if overlap then
    for x in pairs(r.live) do
      if x ~= id then return 'overlap' end
    end
  end
  return nil
end
-- occ_started records that the claim leases occurrence id of r (its
-- member mem), under Overlap: the later starts of this claim see it run.
local function occ_started(r, id, mem, dl)
  r.live[id], r.add[#r.add + 1] = true, mem
  if not r.dl or dl > r.dl then r.dl = dl end
end
-- occ_skipped records a skip of occurrence id of r for why.
local function occ_skipped(r, id, why)
  r.skips = r.skips + 1
  r.last, r.why = id, why
end
-- occ_write writes what occ_started and occ_skipped recorded.
local function occ_write(now)
  local n = 0
  for _, r in pairs(OCC) do
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
