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
--
-- occ_read(occs, op, id, now) parses op, the policy of occurrence item id
-- (nil when it is not one), and reads its registration's state at now ms
-- once per claim (occs: registration name -> state, which occ_write
-- writes): {R, RN, exists, live (another occurrence runs), stale (ids to
-- drop), add (ids leased now), skips}. Returns overlap, window (ms or
-- nil), state.
--@include keys
--@include rec_key

local function occ_read(occs, op, id, now)
  local o, w = string.match(op, '^(%d),(%d*)$')
  local name = string.match(id, '^rec:(.*)@[^@]*$')
  if not o or not name then return nil end
  local r = occs[name]
  if not r then
    r = {R = rec_key(name), RN = K_PREFIX .. 'rn:' .. name, live = {}, stale = {}, add = {}, skips = 0}
    r.exists = redis.call('HEXISTS', r.R, 'g') == 1
    occs[name] = r
  end
  if o == '1' and not r.read then
    r.read = true
    for _, x in ipairs(redis.call('SMEMBERS', r.RN)) do
      local bare = string.sub(x, 1, 4) == 'rec:'
      local xid, tok = x, nil
      if not bare then xid, tok = string.sub(x, 18), string.sub(x, 1, 16) end
      local st, dl, itok = unpack(redis.call('HMGET', ARGV[1] .. xid, 'st', 'dl', 'tok'))
      local mine = bare or itok == tok
      if st == 'l' and mine and tonumber(dl) > now then
        r.live[xid] = true
      elseif not st or st == 'c' or st == 'd' or not mine then
        r.stale[#r.stale + 1] = x
      end
    end
  end
  return o == '1', tonumber(w), r
end
