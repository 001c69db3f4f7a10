-- rate_early(key) reports whether an enqueue may put an item of key
-- straight into waiting (rate_behind): the queue has rate limits, and key
-- no concurrency limit, which a claim checks first. Reads only; once per
-- script.
--@include keys

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
