-- Rate limits (SetRateLimit in limit.go). K_LIMITS maps a limit key (an
-- item's field lk; "" for items without one) to "N,PER": at most N claims
-- of the key's items in any PER µs of Redis TIME, that is fewer than N
-- claims in (t - PER, t] at every claim t. The sequence hash's field lim
-- counts the limits set, so a queue without any reads nothing more.
-- Per limited key, found while running:
--
--   {dq:NAME}:rl:KEY  zset    the key's claims: member -> TIME µs, trimmed
--                             to the window, expiring PER after the last
--   {dq:NAME}:rw:KEY  zset    the waiting items: member -> slot (µs); the
--                             last slot is the tail
--   {dq:NAME}:rr:KEY  string  the last slot given to a waiting item that
--                             waits again (µs), expiring at it
--   {dq:NAME}:rx:KEY  zset    the items waiting under an earlier limit,
--                             that rate_limit.lua lets go
--
-- A claim that meets a due item of a full key leaves it in sched,
-- rescored to its slot (its field wt set to the slot in ms, rounded up):
-- when the window has room again, and PER/N after the tail, so that
-- waiting items come due one by one at the limit's rate instead of all at
-- once. A new item of a key whose tail is still ahead waits behind it, so
-- waiting items go first. A waiting item that finds the window full at
-- its slot (its consumer was late, or an earlier item was) waits again
-- in its place, not behind the tail: when the window has room, and PER/N
-- after the last slot given to one that waits again, so that those do not
-- all come due at once either (whatever the claims' batch). A slot is when to
-- look again, not a promise: at its slot the claim checks the log again,
-- so the log alone decides and no claim ever exceeds the limit. An item
-- that leaves sched while it waits leaves the index too (waiting_of).

-- A limit of more than one claim per RATE_GRID µs gives its waiting
-- items slots at the ends of RATE_GRID intervals: the items of one
-- interval come due together and are claimed together, a claim per group
-- rather than one per item. Never earlier than the slot computed; the
-- log still decides each claim.
local RATE_GRID = 10000
local RATE = {}
-- rate_due is when an item whose slot is s µs is due (ms).
local function rate_due(l, s)
  if math.ceil(l.per / l.n) < RATE_GRID then
    return math.ceil(s / RATE_GRID) * (RATE_GRID / 1000)
  end
  return math.ceil(s / 1000)
end
-- rate_read reads the limit of key, its log and its tail, for a claim at
-- now µs: false when the key has no limit. Reads only (see the key
-- layout).
local function rate_read(key, nowus)
  local l = RATE[key]
  if l ~= nil then return l end
  l = false
  local c = redis.call('HGET', K_LIMITS, key)
  local n, per = string.match(c or '', '^(%d+),(%d+)$')
  if n then
    l = {n = tonumber(n), per = tonumber(per), adm = {}, wake = {}, gone = {}}
    l.L, l.W, l.R = K_PREFIX .. 'rl:' .. key, K_PREFIX .. 'rw:' .. key, K_PREFIX .. 'rr:' .. key
    l.lo = string.format('%d', nowus - l.per)
    l.cnt = redis.call('ZCOUNT', l.L, '(' .. l.lo, '+inf')
    l.c0 = l.cnt
    l.tail = tonumber(redis.call('ZRANGE', l.W, -1, -1, 'WITHSCORES')[2])
    l.again = tonumber(redis.call('GET', l.R))
  end
  RATE[key] = l
  return l
end
-- rate_room is when l's window next has room for a claim (µs), for a claim
-- at nowus that found it full: when the claim of rank cnt - N in it (this
-- claim's own are the last, at nowus) is PER old.
local function rate_room(l, nowus)
  if l.room == nil then
    local r, t = l.cnt - l.n, nowus
    if r < l.c0 then
      t = tonumber(redis.call('ZRANGE', l.L, '(' .. l.lo, '+inf', 'BYSCORE', 'LIMIT', r, 1, 'WITHSCORES')[2]) or nowus
    end
    l.room = t + l.per
  end
  return l.room
end
-- rate_early reports whether an enqueue may put an item of key straight
-- into waiting (rate_behind): the queue has rate limits, and key no
-- concurrency limit, which a claim checks first. Reads only; once per
-- script.
local EARLY = nil
local function rate_early(key)
  if EARLY == nil then
    local f = redis.call('HMGET', K_SEQ, 'lim', 'cc')
    EARLY = {lim = f[1] ~= false, cc = f[2] ~= false, keys = {}}
  end
  if not EARLY.lim then return false end
  if EARLY.cc then
    -- HGET, not HEXISTS: a producer's Redis user has the one (docs/operations.md).
    if EARLY.keys[key] == nil then EARLY.keys[key] = redis.call('HGET', K_CONC, key) == false end
    return EARLY.keys[key]
  end
  return true
end
-- rate_tail reads key's limit and tail once per script (tails: key ->
-- {l, W, tail} or false); its first call for a key comes before the
-- script's first write.
local function rate_tail(tails, key)
  local t = tails[key]
  if t == nil then
    t = false
    local n, per = string.match(redis.call('HGET', K_LIMITS, key) or '', '^(%d+),(%d+)$')
    if n then
      local W = K_PREFIX .. 'rw:' .. key
      t = {l = {n = tonumber(n), per = tonumber(per)}, W = W, tail = tonumber(redis.call('ZRANGE', W, -1, -1, 'WITHSCORES')[2])}
    end
    tails[key] = t
  end
  return t
end
-- rate_behind is, for a new item of key due now that an enqueue stores at
-- nowus, its slot (µs) and when it is due (ms) when it must wait behind
-- the key's waiting items (their tail is still ahead): it goes
-- into waiting at once, where a claim would have put it, with no claim to
-- find it due first. Else nil. Reads nothing but rate_tail's.
local function rate_behind(tails, key, nowus)
  local t = rate_tail(tails, key)
  if not t or not t.tail or rate_due(t.l, t.tail) * 1000 <= nowus then return nil end
  local s = t.tail + math.ceil(t.l.per / t.l.n)
  t.tail = s
  return s, rate_due(t.l, s)
end
-- rate_one decides, for a due item (member mem; waiting: it has wt) of a
-- key whose limit is l, at nowus: nil when it is claimed, else the slot
-- (ms) it waits for. Reads only.
local function rate_one(l, mem, waiting, nowus)
  -- The tail's item is due when its slot's ms has begun.
  local ahead = l.tail and rate_due(l, l.tail) * 1000 > nowus
  if l.cnt < l.n and (waiting or not ahead) then
    l.cnt = l.cnt + 1
    l.adm[#l.adm + 1] = mem
    if waiting then l.gone[#l.gone + 1] = mem end
    return nil
  end
  local gap = math.ceil(l.per / l.n)
  local s = nowus + 1
  if l.cnt >= l.n then s = rate_room(l, nowus) end
  -- A new item goes behind the tail; a waiting one keeps its place,
  -- after the last one that waits again.
  local after = l.tail
  if waiting then after = l.again end
  if after and after + gap > s then s = after + gap end
  if waiting then l.again, l.set = s, true end
  if not l.tail or s > l.tail then l.tail = s end
  l.wake[#l.wake + 1] = string.format('%d', s)
  l.wake[#l.wake + 1] = mem
  return rate_due(l, s)
end
-- rate_successors moves the waiting items whose room is this claim's m
-- claims at nowus to that room, if they were given an earlier slot. The
-- waiting items take the window's rooms in order, one per claim in it:
-- the items of ranks N-m to N-1 of the index take the rooms of the
-- window's last m claims, this claim's, at nowus + PER. A slot given
-- ahead from the tail assumed each claim at its item's slot: a claim later
-- than that would make its successor find the window full and wait again
-- (a claim for nothing), so the successor's slot follows the claim. It is
-- left if that would put it after the next item's, to keep the order.
local function rate_successors(l, m, nowus)
  local ws = redis.call('ZRANGE', l.W, math.max(l.n - m, 0), l.n, 'WITHSCORES')
  local room = nowus + l.per
  local cap = tonumber(ws[2 * (m + 1)])
  for i = 1, math.min(m, #ws / 2) do
    local mem, s = ws[2 * i - 1], tonumber(ws[2 * i])
    if s < room and (not cap or room <= cap) then
      local due = rate_due(l, room)
      redis.call('ZADD', l.W, string.format('%d', room), mem)
      redis.call('ZADD', K_SCHED, 'XX', due, mem)
      redis.call('HSET', ARGV[1] .. string.sub(mem, 18), 'wt', due)
    end
  end
end
-- rate_write records what rate_one decided: the claims in each key's log,
-- the waiting items in its index.
local function rate_write(now, frac)
  local nowus = now * 1000 + frac
  local ts = string.format('%d', nowus)
  for _, l in pairs(RATE) do
    if l then
      if #l.adm > 0 then
        local z = {}
        for i, mem in ipairs(l.adm) do z[2 * i - 1] = ts; z[2 * i] = mem end
        redis.call('ZREMRANGEBYSCORE', l.L, '-inf', l.lo)
        redis.call('ZADD', l.L, unpack(z))
        redis.call('PEXPIRE', l.L, math.ceil(l.per / 1000) + 1)
      end
      if #l.gone > 0 then redis.call('ZREM', l.W, unpack(l.gone)) end
      if #l.wake > 0 then redis.call('ZADD', l.W, unpack(l.wake)) end
      if #l.adm > 0 then rate_successors(l, #l.adm, nowus) end
      if l.set then
        redis.call('SET', l.R, string.format('%d', l.again), 'PX', math.ceil((l.again - nowus) / 1000) + 1)
      end
    end
  end
end

-- The queue's own rate limit (SetQueueRateLimit): the sequence hash's
-- field ql is "N,PER" µs, and {dq:NAME}:ql its log, as rl:KEY is a key's.
-- Every claim of the queue counts in it, whatever the item's limit key (a
-- key's limits are checked too). Its window full, a claim leases nothing
-- more and leaves the due items due, in their order, and its reply tells
-- the consumers to wait until the window has room: no item is rescored,
-- and no consumer polls.
local K_QLOG = K_PREFIX .. 'ql'
-- queue_rate_read parses ql, the sequence's field, and reads the log for
-- a claim at nowus, as rate_read a key's (nil: no limit). Reads only.
local function queue_rate_read(ql, nowus)
  local n, per = string.match(ql or '', '^(%d+),(%d+)$')
  if not n then return nil end
  local l = {n = tonumber(n), per = tonumber(per), L = K_QLOG}
  l.lo = string.format('%d', nowus - l.per)
  l.cnt = redis.call('ZCOUNT', l.L, '(' .. l.lo, '+inf')
  l.c0 = l.cnt
  return l
end
-- queue_rate_write records the claims of this claim's lease members mems
-- (z: deadline, member pairs) in the queue's log, at nowus.
local function queue_rate_write(l, z, nowus)
  local ts, w = string.format('%d', nowus), {}
  for i = 2, #z, 2 do w[#w + 1] = ts; w[#w + 1] = z[i] end
  redis.call('ZREMRANGEBYSCORE', l.L, '-inf', l.lo)
  redis.call('ZADD', l.L, unpack(w))
  redis.call('PEXPIRE', l.L, math.ceil(l.per / 1000) + 1)
end
-- rate_logs_of returns the rate logs that hold the claim of lease member
-- mem of item hash h (its limit key's, the queue's): a Snooze takes it out
-- of them again. Reads only; nothing when the queue has no rate limit.
local function rate_logs_of(h, mem)
  local q = redis.call('HMGET', K_SEQ, 'lim', 'ql')
  local logs = {}
  if q[1] then logs[1] = K_PREFIX .. 'rl:' .. (redis.call('HGET', h, 'lk') or '') end
  if q[2] then logs[#logs + 1] = K_QLOG end
  local out = {}
  for _, L in ipairs(logs) do
    if redis.call('ZSCORE', L, mem) then out[#out + 1] = L end
  end
  return out
end
