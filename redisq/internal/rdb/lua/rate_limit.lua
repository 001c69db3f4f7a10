-- rate limit: ARGV[2] a limit key, ARGV[3] N (0: no limit), ARGV[4] PER
-- (µs). Sets the key's limit (see include/rate.lua), or removes it, and
-- lets up to ScriptBatch of the items waiting under the old one come due
-- now, each under its member, so that they wait again, under the new
-- limit, only if they must. Returns {limits set, items let go, items still
-- waiting}: the caller runs it again until none is.
--
-- KEYS: sched, wake, seq; the limits, the key's waiting items and last
--   slot (the waiting items' hashes are found while running)
--@include common

local W, T = K_PREFIX .. 'rw:' .. ARGV[2], K_PREFIX .. 'rt:' .. ARGV[2]
local ws = redis.call('ZRANGE', W, 0, {{SCRIPT_BATCH}} - 1)
-- Every item hash is read before the first write (see the key layout).
local fs = {}
for i, mem in ipairs(ws) do fs[i] = redis.call('HMGET', ARGV[1] .. string.sub(mem, 18), 'st', 'mem', 'wt') end
if ARGV[3] == '0' then
  redis.call('HDEL', K_LIMITS, ARGV[2])
else
  redis.call('HSET', K_LIMITS, ARGV[2], ARGV[3] .. ',' .. ARGV[4])
end
local n = redis.call('HLEN', K_LIMITS)
if n > 0 then redis.call('HSET', K_SEQ, 'lim', n) else redis.call('HDEL', K_SEQ, 'lim') end
local now = now_ms()
local moved = 0
for i, mem in ipairs(ws) do
  local f = fs[i]
  if f[1] == 's' and f[2] == mem and f[3] then
    redis.call('ZADD', K_SCHED, 'XX', now, mem)
    moved = moved + 1
  end
end
if #ws > 0 then redis.call('ZREM', W, unpack(ws)) end
redis.call('DEL', T)
if moved > 0 then redis.call('ZADD', K_WAKE, 0, 'w') end
return {n, moved, redis.call('ZCARD', W)}
