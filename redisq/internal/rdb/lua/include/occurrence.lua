-- Occurrence policies of recurring registrations (Overlap and
-- CatchUpWindow in recurring.go), which the claim applies to an
-- occurrence's first start (attempts 0). An occurrence that a keeper
-- enqueued for a registration with a policy has the field op, "O,W": O is
-- "1" when it is skipped while an earlier occurrence of its registration
-- runs (leased, the lease live), W the catch-up window in ms ("": none),
-- past which a start is skipped: more than W after the item became due
-- (its score: the occurrence, or the slot or place a limit gave it). A
-- skipped occurrence is deleted unstarted; the registration's hash counts
-- it (sk) and keeps the last one's id (ls) and why (lw: 'overlap' or
-- 'late'). Under Overlap, the hash keeps in run the id of the occurrence
-- that started last, and a start checks that item's lease.
--
-- The registration's hash, and the item its run names, are found while
-- running: occ_check reads them, before the claim's first write.

local OCC = {}
-- occ_check decides, for a due occurrence item id whose field op is op,
-- at now ms, whose score is score: it returns the reason it is skipped
-- ('overlap' or 'late') or nil, its registration's state (nil for an id
-- or op it does not know), and whether it is under Overlap. Reads only.
local function occ_check(op, id, score, now)
  local o, w = string.match(op, '^(%d),(%d*)$')
  local name = string.match(id, '^rec:(.*)@[^@]*$')
  if not o or not name then return nil, nil, false end
  local r = OCC[name]
  if not r then
    local R = K_PREFIX .. 'rec:' .. name
    local f = redis.call('HMGET', R, 'g', 'run')
    r = {R = R, exists = f[1] ~= false, live = false, skips = 0}
    if f[2] then
      local it = redis.call('HMGET', ARGV[1] .. f[2], 'st', 'dl')
      r.live = it[1] == 'l' and tonumber(it[2]) > now
    end
    OCC[name] = r
  end
  if w ~= '' and now - score > tonumber(w) then return 'late', r, false end
  if o == '1' and r.live then return 'overlap', r, false end
  return nil, r, o == '1'
end
-- occ_started records that the claim leases occurrence id of r (its
-- occ_check state), under Overlap: the later ones of this claim see it run.
local function occ_started(r, id)
  r.live, r.run = true, id
end
-- occ_skipped records a skip of occurrence id of r for why.
local function occ_skipped(r, id, why)
  r.skips = r.skips + 1
  r.last, r.why = id, why
end
-- occ_write writes what occ_started and occ_skipped recorded.
local function occ_write()
  local n = 0
  for _, r in pairs(OCC) do
    n = n + r.skips
    if r.exists then
      if r.run then redis.call('HSET', r.R, 'run', r.run) end
      if r.skips > 0 then
        redis.call('HINCRBY', r.R, 'sk', r.skips)
        redis.call('HSET', r.R, 'ls', r.last, 'lw', r.why)
      end
    end
  end
  if n > 0 then redis.call('HINCRBY', K_STATS, 'skipped', n) end
end
