-- Concurrency limits, the claim's side (the key layout and the rest are
-- in common.lua, above conc_of). At a claim, an item of a limited key is
-- leased when fewer than K of the key's items hold a place (leases not
-- expired) and, for an item that does not wait yet, none waits: waiting
-- items go first. Otherwise it waits, scheduled at MAXDUE, until a place
-- frees and conc_promote makes it due.

local CONC = {}
-- conc_read reads the concurrency limit of key and its use, for a claim
-- at now ms: false when the key has no limit. Reads only (see the key
-- layout).
local function conc_read(key, now)
  local c = CONC[key]
  if c ~= nil then return c end
  c = false
  local k = tonumber(redis.call('HGET', K_CONC, key))
  if k then
    c = {k = k, F = K_PREFIX .. 'cf:' .. key, Q = K_PREFIX .. 'cq:' .. key}
    c.used = redis.call('ZCOUNT', c.F, '(' .. string.format('%d', now), '+inf')
    c.queued = redis.call('ZCARD', c.Q)
  end
  CONC[key] = c
  return c
end
-- conc_one decides, for a due item of a key whose limit is c (waiting:
-- it has cq), whether it may be leased (true) or waits for a place.
-- Reads only.
local function conc_one(c, waiting)
  if c.used < c.k and (waiting or c.queued == 0) then
    c.used = c.used + 1
    if waiting then c.queued = c.queued - 1 end
    return true
  end
  if not waiting then c.queued = c.queued + 1 end
  return false
end
-- conc_undo takes back conc_one's place for an item that is not leased
-- after all (a rate limit holds it).
local function conc_undo(c, waiting)
  c.used = c.used - 1
  if waiting then c.queued = c.queued + 1 end
end
-- conc_write records what the claim did with the first k due members of
-- sch (fields fs): those leased (not in skip) hold a place until dl, those
-- in park wait. It then makes waiting items due for any place left free
-- (a rate limit can leave one that conc_one counted, and this mends a
-- place freed without a waiting item made due for it).
local function conc_write(sch, fs, k, skip, park, dl, now)
  local mp = ARGV[1]
  for i = 1, k do
    local c = CONC[fs[i][9] or '']
    if c then
      local mem = sch[2 * i - 1]
      local h = mp .. string.sub(mem, 18)
      local waiting = fs[i][11] ~= false
      if not (skip and skip[i]) then
        redis.call('ZADD', c.F, dl, mem)
        redis.call('HSET', h, 'cf', 1)
        if waiting then
          redis.call('ZREM', c.Q, mem)
          redis.call('HDEL', h, 'cq')
        end
      elseif park and park[i] and not waiting then
        redis.call('ZADD', c.Q, now, mem)
        redis.call('HSET', h, 'cq', 1)
      end
    end
  end
  for _, c in pairs(CONC) do
    if c then conc_promote(c, now) end
  end
end
