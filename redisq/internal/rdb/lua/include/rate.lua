-- Rate limits (SetRateLimit in limit.go). K_LIMITS maps a limit key (an
-- item's field lk; "" for items without one) to "N,PER": at most N claims
-- of the key's items in any PER µs of Redis TIME, that is fewer than N
-- claims in (t - PER, t] at every claim t. The sequence hash's field lim
-- counts the limits set, so a queue without any reads nothing more.
-- Per limited key, found while running:
--
--   {dq:NAME}:rl:KEY  zset    the key's claims: member -> TIME µs, trimmed
--                             to the window, expiring PER after the last
--   {dq:NAME}:rt:KEY  string  the last slot given to a waiting item (µs)
--   {dq:NAME}:rw:KEY  zset    the waiting items: member -> slot (ms)
--
-- A claim that meets a due item of a full key leaves it in sched,
-- rescored to its slot (and its field wt set to it): when the oldest claim
-- in the window leaves it, and PER/N after the previous slot given, so
-- that waiting items come due one by one at the limit's rate instead of
-- all at once. A new item of a key whose last slot is still ahead waits
-- behind it, so waiting items go first. A slot is when to look again, not
-- a promise: at its slot the claim checks the log again, so the log alone
-- decides and no claim ever exceeds the limit.

local RATE = {}
-- rate_read reads the limit of key, and its log, for a claim at now µs:
-- false when the key has no limit. Reads only (see the key layout).
local function rate_read(key, nowus)
  local l = RATE[key]
  if l ~= nil then return l end
  l = false
  local c = redis.call('HGET', K_LIMITS, key)
  local n, per = string.match(c or '', '^(%d+),(%d+)$')
  if n then
    l = {n = tonumber(n), per = tonumber(per), adm = {}, wake = {}, gone = {}}
    l.L, l.T, l.W = K_PREFIX .. 'rl:' .. key, K_PREFIX .. 'rt:' .. key, K_PREFIX .. 'rw:' .. key
    l.lo = string.format('%d', nowus - l.per)
    l.cnt = redis.call('ZCOUNT', l.L, '(' .. l.lo, '+inf')
    l.tail = tonumber(redis.call('GET', l.T))
  end
  RATE[key] = l
  return l
end
-- rate_oldest is the oldest claim in l's window (µs), read when a decision
-- needs it: nowus when the window held none before this claim.
local function rate_oldest(l, nowus)
  if l.old == nil then
    l.old = tonumber(redis.call('ZRANGE', l.L, '(' .. l.lo, '+inf', 'BYSCORE', 'LIMIT', 0, 1, 'WITHSCORES')[2]) or nowus
  end
  return l.old
end
-- rate_wait decides, for the first k due members of sch whose fields are
-- fs (lk at 9, wt at 10), which are claimed: it returns nil when all are,
-- else a table of index -> the slot (ms) an item waits for. Reads only.
local function rate_wait(sch, fs, k, now, frac)
  local nowus = now * 1000 + frac
  local wait = nil
  for i = 1, k do
    local l = rate_read(fs[i][9] or '', nowus)
    if l then
      local mem, waiting = sch[2 * i - 1], fs[i][10] ~= false
      if l.cnt < l.n and (waiting or not l.tail or l.tail <= nowus) then
        if l.cnt == 0 then l.old = nowus end
        l.cnt = l.cnt + 1
        l.adm[#l.adm + 1] = mem
        if waiting then l.gone[#l.gone + 1] = mem end
      else
        -- Room comes when the oldest claim leaves the window (or now, when
        -- there is room but earlier waiting items go first).
        local s = nowus + 1
        if l.cnt >= l.n then s = rate_oldest(l, nowus) + l.per end
        -- A waiting item that missed its slot keeps its place: it does not
        -- go behind the slots given since.
        local sp = l.tail and l.tail + math.ceil(l.per / l.n)
        if not waiting and sp and sp > s then s = sp end
        if not l.tail or s > l.tail then l.tail = s end
        wait = wait or {}
        wait[i] = math.ceil(s / 1000)
        l.wake[#l.wake + 1] = wait[i]
        l.wake[#l.wake + 1] = mem
      end
    end
  end
  -- The waiting index is read before the first write, as every key found
  -- while running (see the key layout), when it is to be written.
  for _, l in pairs(RATE) do
    if l and (#l.wake > 0 or #l.gone > 0) then redis.call('EXISTS', l.W) end
  end
  return wait
end
-- rate_write records what rate_wait decided: the claims in each key's log,
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
      if #l.wake > 0 then
        redis.call('ZADD', l.W, unpack(l.wake))
        redis.call('SET', l.T, string.format('%d', l.tail), 'PX', math.ceil((l.tail - nowus + l.per) / 1000) + 1)
      end
    end
  end
end
