-- Concurrency limits, the claim's side (the key layout: conc_keys). At a
-- claim, an item of a limited key given a place (cq 2, in cp) is leased in
-- it; a new item is leased when a place is free and no item waits
-- (waiting items go first); otherwise it waits, scheduled at MAXDUE, in
-- cq, until conc_promote gives it a place.
--
-- conc_read(concs, key, now) reads the concurrency limit of key and its
-- use, for a claim at now ms, once per claim (concs: key -> limit, or
-- false when the key has no limit or it is being removed: its items are
-- leased as if it had none; conc_write then writes them). Reads only (see
-- keys.lua).
--@include keys
--@include conc_keys

local function conc_read(concs, key, now)
  local c = concs[key]
  if c ~= nil then return c end
  c = false
  local k = tonumber(redis.call('HGET', K_CONC, key))
  if k and k > 0 then
    c = conc_keys(key)
    c.k = k
    c.used = redis.call('ZCOUNT', c.F, '(' .. string.format('%d', now), '+inf') + redis.call('ZCARD', c.P)
    c.queued = redis.call('ZCARD', c.Q)
  end
  concs[key] = c
  return c
end
