-- claim_due(now, frac, acked) is the claim of the claim scripts
-- (claim.lua, whose header states ARGV[2..9], ack_claim.lua,
-- ack_many_claim.lua), at Redis TIME now ms and frac µs (now_ms): it
-- reclaims expired leases (reclaim_expired), leases up to ARGV[2] due
-- items under their limits and policies, and takes the timer for the next
-- due item or lease deadline. Returns the claim's reply {now, next, timed,
-- item...}, then acked (the outcomes of ack_many_claim's acks) if given.
-- A script calls it as its last line, "return claim_due(...)": the
-- assembler puts the body there (see inlined in lua.go).
--
-- MAXWAIT (ms) bounds next, and so the timer's TTL; claim_reply appends
-- acked to the reply.
--@include keys
--@include after
--@include reclaim_expired
--@include take_timer
--@include record_lateness
--@include queue_rate_read
--@include queue_rate_write
--@include rate_read
--@include rate_one
--@include rate_room
--@include rate_write
--@include conc_keys
--@include limit_key
--@include conc_read
--@include conc_one
--@include conc_undo
--@include conc_leave
--@include conc_write
--@include occ_read
--@include occ_skip
--@include occ_started
--@include occ_skipped
--@include occ_write
--@include waiting_of
--@include waiting_end

local MAXWAIT = 86400000
local function claim_reply(out, acked)
  if acked then
    for _, a in ipairs(acked) do out[#out + 1] = a end
  end
  return out
end
local function claim_due(now, frac, acked)
  -- A paused queue (see Pause) leases nothing and takes no timer: its
  -- consumers wait on the marker, which Resume rings.
  local qf = redis.call('HMGET', K_SEQ, 'paused', 'lim', 'cc', 'ql')
  if qf[1] then return claim_reply({now, -1, 0}, acked) end
  local mp = ARGV[1]
  local n = math.min(tonumber(ARGV[2]), {{SCRIPT_BATCH}})
  local rearm = false
  local lh = redis.call('ZRANGE', K_LEASE, 0, 0, 'WITHSCORES')
  if lh[1] and tonumber(lh[2]) <= now then
    rearm = reclaim_expired(now, frac)
    lh = redis.call('ZRANGE', K_LEASE, 0, 0, 'WITHSCORES')
  end
  local out = {now, -1, 0}
  local leased, wait, park, wmin = 0, nil, nil, nil
  -- The queue's own rate limit bounds what this claim leases
  -- (queue_rate_read).
  local ql = qf[4] and queue_rate_read(qf[4], now * 1000 + frac)
  if ql then n = math.min(n, math.max(ql.n - ql.cnt, 0)) end
  -- With limits, a claim looks at up to ScriptBatch due items to lease n,
  -- so that the items a limit holds do not hold up the others behind them.
  -- It reads the due items alone (and the first item after them, for the
  -- next wake-up): a limited queue's sched holds items waiting for their
  -- slot or a place, which it would be costly to read at every claim.
  local m = n
  local sch
  if n > 0 and (qf[2] or qf[3]) then
    m = {{SCRIPT_BATCH}}
    local t = string.format('%d', now)
    sch = redis.call('ZRANGE', K_SCHED, 0, 0, 'WITHSCORES')
    if sch[1] and tonumber(sch[2]) <= now then
      sch = redis.call('ZRANGE', K_SCHED, '-inf', t, 'BYSCORE', 'LIMIT', 0, m + 1, 'WITHSCORES')
    end
    if sch[1] and tonumber(sch[2]) <= now and #sch < 2 * (m + 1) then
      local nx = redis.call('ZRANGE', K_SCHED, '(' .. t, '+inf', 'BYSCORE', 'LIMIT', 0, 1, 'WITHSCORES')
      sch[#sch + 1], sch[#sch + 2] = nx[1], nx[2]
    end
  else
    sch = redis.call('ZRANGE', K_SCHED, 0, m, 'WITHSCORES')
  end
  local k = 0
  while k < m and sch[2 * k + 1] and tonumber(sch[2 * k + 2]) <= now do k = k + 1 end
  local dl = after(now, frac, tonumber(ARGV[3]))
  if k > 0 then
    -- Every item hash is read before the first write (see keys.lua).
    -- Items whose limit key is at its concurrency limit wait for a place
    -- (see conc_read), and those at its rate limit for a slot (rate_read);
    -- the claim looks at due items until n are leased. The limits are read
    -- here, after the reclaim's writes, like the hashes: each step reads
    -- before its own writes, and the reclaim (or the ack before it) leaves
    -- a whole state if a later step fails.
    -- A recurring occurrence's first start may be skipped by its
    -- registration's policy (occ_read): it is dropped.
    -- The limits' and policies' state of this claim, by key and by
    -- registration: made only when the queue has limits, or an item a
    -- policy.
    local rates, concs, occs = qf[2] and {}, qf[3] and {}, nil
    local fs, skip, drop, nowus, ok = {}, nil, nil, now * 1000 + frac, 0
    for i = 1, k do
      local mem = sch[2 * i - 1]
      local id = string.sub(mem, 18)
      -- The fields the claim decides by, then the job, which the reply
      -- carries as read (JOB_FIELDS, in the order Go reads them).
      local f = redis.call('HMGET', mp .. id, 'p', 'att', 'lk', 'wt', 'cq', 'op', {{JOB_FIELDS}})
      local p, att, lk, wt, cq, op = unpack(f, 1, 6)
      local key = lk or ''
      fs[i] = {p = p, att = att, key = key, wt = wt, cq = cq, f = f}
      local why, occ, ov = nil, nil, false
      if op then
        occs = occs or {}
        local overlap, window, r = occ_read(occs, op, id, now)
        if r then
          if (tonumber(att) or 0) == 0 then why = occ_skip(overlap, window, r, id, tonumber(sch[2 * i]), now) end
          occ, ov = r, overlap
        end
      end
      local c = not why and qf[3] and conc_read(concs, key, now)
      local l = not why and qf[2] and rate_read(rates, key, nowus)
      -- The limits' keys that its lease or wait may write, read first.
      if cq and not c then
        local ck = conc_keys(key)
        redis.call('EXISTS', ck.Q, ck.P)
      end
      if wt and c then redis.call('EXISTS', limit_key('rw', key), limit_key('rx', key)) end
      if why then
        drop = drop or {}
        drop[i] = {r = occ, why = why, w = (wt or cq) and waiting_of(mp .. id)}
      elseif c and not conc_one(c, cq) then
        park = park or {}
        park[i] = true
      elseif l then
        local slot = rate_one(l, mem, wt ~= false, nowus)
        if slot then
          wait = wait or {}
          wait[i] = slot
          if c then conc_undo(c, cq) end
        end
      end
      if why or park and park[i] or wait and wait[i] then
        skip = skip or {}
        skip[i] = true
      else
        ok = ok + 1
        if ov then occ_started(occ, id, mem, dl) end
      end
      if ok == n then k = i; break end
    end
    local late = sch
    if skip then
      late = {}
      for i = 1, k do if not skip[i] then late[#late + 1] = sch[2 * i - 1]; late[#late + 1] = sch[2 * i] end end
    end
    -- The first write, so that nothing is leased if it failed (it cannot:
    -- see stats.go).
    record_lateness(late, skip and #late / 2 or k, now)
    -- The reply: per item its id, payload, attempts, due, token, deadline
    -- and job (o: the reply's length).
    local z, o = {}, #out
    for i = 1, k do if not (skip and skip[i]) then
      local mem = sch[2 * i - 1]
      local id = string.sub(mem, 18)
      local h = mp .. id
      local tok = string.sub(mem, 1, 16)
      local it = fs[i]
      local att = (tonumber(it.att) or 0) + 1
      redis.call('HSET', h, 'st', 'l', 'tok', tok, 'dl', dl, 'att', att)
      if it.wt then redis.call('HDEL', h, 'wt') end
      if it.cq then conc_leave(it.key, h, mem) end
      z[#z + 1] = dl
      z[#z + 1] = mem
      leased = leased + 1
      out[o + 1], out[o + 2], out[o + 3], out[o + 4], out[o + 5], out[o + 6] = id, it.p, att, tonumber(sch[2 * i]), tok, dl
      o = o + 6
      -- The job: the fields after the six named.
      local f = it.f
      for x = 7, #f do
        o = o + 1
        out[o] = f[x] or ''
      end
    end end
    redis.call('ZREMRANGEBYRANK', K_SCHED, 0, k - 1)
    if leased > 0 then redis.call('ZADD', K_LEASE, unpack(z)) end
    if ql and leased > 0 then queue_rate_write(ql, z, nowus) end
    if wait then
      for i, slot in pairs(wait) do
        local mem = sch[2 * i - 1]
        redis.call('ZADD', K_SCHED, slot, mem)
        redis.call('HSET', mp .. string.sub(mem, 18), 'wt', slot)
        if not wmin or slot < wmin then wmin = slot end
      end
    end
    if park then
      for i in pairs(park) do redis.call('ZADD', K_SCHED, {{MAXDUE}}, sch[2 * i - 1]) end
    end
    if drop then
      for i, d in pairs(drop) do
        local mem = sch[2 * i - 1]
        waiting_end(d.w or nil, nil, mem)
        redis.call('DEL', mp .. string.sub(mem, 18))
        occ_skipped(d.r, string.sub(mem, 18), d.why)
      end
    end
    if occs then occ_write(occs, now) end
    if qf[2] then rate_write(rates, now, frac) end
    if qf[3] then conc_write(concs, sch, fs, k, skip, park, dl, now) end
  end
  local nxt = -1
  -- The queue's window is full: due work left waits for its room.
  local qroom = ql and ql.cnt + leased >= ql.n
  if sch[2 * k + 1] then
    local d = tonumber(sch[2 * k + 2]) - now
    -- Due work is left: wake a waiter for it, unless this claim leased
    -- items and the caller watches for it (its Queue rings the marker
    -- unless one of its consumers claims again first).
    if qroom then
      -- Not before the window has room, whenever it is due.
      ql.cnt = ql.cnt + leased
      d = math.max(d, math.ceil(rate_room(ql, now * 1000 + frac) / 1000) - now, 1)
    elseif d <= 0 then
      d = 0
      if n > 0 and (leased == 0 or ARGV[9] ~= '1') then rearm = true end
    end
    nxt = d
  end
  if wmin and (nxt < 0 or wmin - now < nxt) then nxt = wmin - now end
  local lhd = nil
  if lh[1] then lhd = tonumber(lh[2]) end
  if leased > 0 and (not lhd or dl < lhd) then lhd = dl end
  if lhd then
    local d = lhd - now
    if d < 0 then d = 0 end
    if nxt < 0 or d < nxt then nxt = d end
  end
  if nxt > MAXWAIT then nxt = MAXWAIT end
  local timed = 0
  if nxt > 0 then timed = take_timer(now, nxt) end
  if rearm then redis.call('ZADD', K_WAKE, 0, 'w') end
  out[2] = nxt
  out[3] = timed
  return claim_reply(out, acked)
end
