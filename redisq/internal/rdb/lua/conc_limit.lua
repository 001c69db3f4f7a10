-- concurrency limit: ARGV[2] a limit key, ARGV[3] K (0: no limit). Sets
-- the key's concurrency limit (see conc_of in include/common.lua), or
-- removes it. With a limit, as many waiting items as there are free
-- places are made due now; without, up to ScriptBatch of the waiting
-- items are let go: due now, without cq, as new items of the key.
-- Returns {limits set, items still waiting}: without a limit, the caller
-- calls again until none is (no claim adds a waiting item to a key
-- without a limit, so the calls end).
--
-- KEYS: sched, wake, seq; the limits, the key's leased items and its
--   waiting items (the waiting items' hashes are found while running)
--@include common

local F, Q = K_PREFIX .. 'cf:' .. ARGV[2], K_PREFIX .. 'cq:' .. ARGV[2]
local ws = {}
if ARGV[3] == '0' then ws = redis.call('ZRANGE', Q, 0, {{SCRIPT_BATCH}} - 1) end
-- Every item hash is read before the first write (see the key layout).
local fs = {}
for i, mem in ipairs(ws) do fs[i] = redis.call('HMGET', ARGV[1] .. string.sub(mem, 18), 'st', 'mem', 'cq') end
local n = redis.call('HLEN', K_CONC)
if ARGV[3] == '0' then
  n = n - redis.call('HDEL', K_CONC, ARGV[2])
else
  n = n + redis.call('HSET', K_CONC, ARGV[2], ARGV[3])
end
if n > 0 then redis.call('HSET', K_SEQ, 'cc', n) else redis.call('HDEL', K_SEQ, 'cc') end
local now = now_ms()
if ARGV[3] ~= '0' then
  conc_promote({k = tonumber(ARGV[3]), F = F, Q = Q}, now)
  return {n, redis.call('ZCARD', Q)}
end
local moved = 0
for i, mem in ipairs(ws) do
  local f = fs[i]
  if f[1] == 's' and f[2] == mem and f[3] then
    redis.call('ZADD', K_SCHED, 'XX', 'LT', now, mem)
    redis.call('HDEL', ARGV[1] .. string.sub(mem, 18), 'cq')
    moved = moved + 1
  end
end
if #ws > 0 then redis.call('ZREM', Q, unpack(ws)) end
if moved > 0 then redis.call('ZADD', K_WAKE, 0, 'w') end
return {n, redis.call('ZCARD', Q)}
