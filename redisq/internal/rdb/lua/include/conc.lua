-- Concurrency limits, the claim's side (the key layout and the rest are
-- in common.lua, above conc_keys). At a claim, an item of a limited key
-- given a place (cq 2, in cp) is leased in it; a new item is leased when
-- a place is free and no item waits (waiting items go first); otherwise
-- it waits, scheduled at MAXDUE, in cq, until conc_promote gives it a
-- place.

local CONC = {}
-- conc_read reads the concurrency limit of key and its use, for a claim
-- at now ms: false when the key has no limit (or it is being removed: its
-- items are leased as if it had none). Reads only (see the key layout).
local function conc_read(key, now)
  local c = CONC[key]
  if c ~= nil then return c end
  c = false
  local k = tonumber(redis.call('HGET', K_CONC, key))
  if k and k > 0 then
    c = conc_keys(key)
    c.k = k
    c.used = redis.call('ZCOUNT', c.F, '(' .. string.format('%d', now), '+inf') + redis.call('ZCARD', c.P)
    c.queued = redis.call('ZCARD', c.Q)
  end
  CONC[key] = c
  return c
end
-- conc_one decides, for a due item of a key whose limit is c (cq: its
-- field), whether it may be leased (true) or waits for a place. An item
-- given a place keeps it unless the limit was lowered below the places
-- taken; then it waits again, first. Reads only.
local function conc_one(c, cq)
  if cq == '2' then
    if c.used <= c.k then return true end
    c.used, c.queued = c.used - 1, c.queued + 1
    return false
  end
  if c.used < c.k and c.queued == 0 then
    c.used = c.used + 1
    return true
  end
  c.queued = c.queued + 1
  return false
end
-- conc_undo takes back conc_one's place for an item that is not leased
-- after all (a rate limit holds it): one given a place keeps it.
local function conc_undo(c, cq)
  if cq ~= '2' then c.used = c.used - 1 end
end
-- conc_leave takes a leased item (member mem, hash h) of key out of the
-- waiting items and the places given, whatever its key's limit now.
local function conc_leave(key, h, mem)
  local c = conc_keys(key)
  redis.call('ZREM', c.Q, mem)
  redis.call('ZREM', c.P, mem)
  redis.call('HDEL', h, 'cq')
end
-- conc_write records what the claim did with the first k due members of
-- sch (fields fs, lk at 9, wt at 10, cq at 11): those leased (not in
-- skip) hold a place until dl, those in park wait, in their order (turn:
-- now * 1000 + rank), one given a place first. A parked item waits for no
-- rate slot any more. It then gives the free places (a rate limit can
-- leave one that conc_one counted) to waiting items.
local function conc_write(sch, fs, k, skip, park, dl, now)
  local mp = ARGV[1]
  for i = 1, k do
    local key = fs[i][9] or ''
    local c = CONC[key]
    if c then
      local mem = sch[2 * i - 1]
      local h = mp .. string.sub(mem, 18)
      if not (skip and skip[i]) then
        redis.call('ZADD', c.F, dl, mem)
        redis.call('HSET', h, 'cf', 1)
      elseif park and park[i] then
        local turn = now * 1000 + i
        if fs[i][11] == '2' then
          turn = tonumber(redis.call('ZSCORE', c.P, mem)) or turn
          redis.call('ZREM', c.P, mem)
        end
        redis.call('ZADD', c.Q, 'NX', string.format('%d', turn), mem)
        redis.call('HSET', h, 'cq', 1)
        if fs[i][10] then
          redis.call('HDEL', h, 'wt')
          redis.call('ZREM', K_PREFIX .. 'rw:' .. key, mem)
          redis.call('ZREM', K_PREFIX .. 'rx:' .. key, mem)
        end
      end
    end
  end
  for _, c in pairs(CONC) do
    if c then conc_promote(c, now) end
  end
end
