-- concurrency limit: sets a key's concurrency limit (see conc_keys), and
-- gives the free places to waiting items. K 0 removes it: the limit
-- becomes "0" (being removed: claims lease the key's items as if it had
-- none) and up to ScriptBatch of its waiting items are let go, due now,
-- as new items of the key; once none waits the limit is gone. The caller
-- of a removal calls again until none is (no claim adds a waiting item to
-- a key without a limit, so the calls end); until then the key is listed,
-- its limit 0, so an interrupted removal shows. The waiting items' hashes
-- are found while running.
--
-- KEYS[1] -> {dq:NAME}:sched
-- KEYS[2] -> {dq:NAME}:wake
-- KEYS[3] -> {dq:NAME}:seq
-- KEYS[4] -> {dq:NAME}:conc, the concurrency limits
-- KEYS[5] -> {dq:NAME}:cf:KEY, the key's leased items
-- KEYS[6] -> {dq:NAME}:cq:KEY, its waiting items
-- KEYS[7] -> {dq:NAME}:cp:KEY, its items given a place
-- ARGV[1] -> {dq:NAME}:m:, the item hash prefix
-- ARGV[2] -> the limit key
-- ARGV[3] -> K, the items leased at once (0: no limit)
-- Output: {limits set, items still waiting}
--@include keys
--@include conc_keys
--@include conc_promote
--@include now_ms

local c = conc_keys(ARGV[2])
local ws = {}
if ARGV[3] == '0' then ws = redis.call('ZRANGE', c.Q, 0, {{SCRIPT_BATCH}} - 1) end
-- Every item hash is read before the first write (see the key layout).
local fs = {}
for i, mem in ipairs(ws) do fs[i] = redis.call('HMGET', ARGV[1] .. string.sub(mem, 18), 'st', 'mem', 'cq') end
local had = redis.call('HEXISTS', K_CONC, ARGV[2]) == 1
local now = now_ms()
if ARGV[3] ~= '0' then
  redis.call('HSET', K_CONC, ARGV[2], ARGV[3])
  c.k = tonumber(ARGV[3])
  conc_promote(c, now)
elseif had or #ws > 0 then
  local moved = 0
  for i, mem in ipairs(ws) do
    local f = fs[i]
    if f[1] == 's' and f[2] == mem and f[3] then
      redis.call('ZADD', K_SCHED, 'XX', 'LT', now, mem)
      redis.call('HDEL', ARGV[1] .. string.sub(mem, 18), 'cq')
      moved = moved + 1
    end
  end
  if #ws > 0 then redis.call('ZREM', c.Q, unpack(ws)) end
  if moved > 0 then redis.call('ZADD', K_WAKE, 0, 'w') end
  if redis.call('ZCARD', c.Q) > 0 then
    redis.call('HSET', K_CONC, ARGV[2], 0)
  else
    redis.call('HDEL', K_CONC, ARGV[2])
  end
end
local n = redis.call('HLEN', K_CONC)
if n > 0 then redis.call('HSET', K_SEQ, 'cc', n) else redis.call('HDEL', K_SEQ, 'cc') end
return {n, redis.call('ZCARD', c.Q)}
