-- rate limit: the first call of a change sets the key's limit (see
-- rate_read), or removes it, and moves the key's waiting items from its
-- index to the index of those to let go (merged with what an earlier
-- change left there), so that the key's tail (and the last slot of one
-- that waits again) ends at once. Each call then lets up to ScriptBatch
-- of those come due now (or keep their place when due already), as new
-- items of the key, without wt, so that they wait again, under the new
-- limit, only if they must. The caller calls again until none is left;
-- no claim adds to the items to let go, so the calls end. The waiting
-- items' hashes are found while running.
--
-- KEYS[1] -> {dq:NAME}:sched
-- KEYS[2] -> {dq:NAME}:wake
-- KEYS[3] -> {dq:NAME}:seq
-- KEYS[4] -> {dq:NAME}:limits, the rate limits
-- KEYS[5] -> {dq:NAME}:rl:KEY, the key's log
-- KEYS[6] -> {dq:NAME}:rw:KEY, its waiting items
-- KEYS[7] -> {dq:NAME}:rx:KEY, the items to let go
-- KEYS[8] -> {dq:NAME}:rr:KEY, the last slot of one that waits again
-- ARGV[1] -> {dq:NAME}:m:, the item hash prefix
-- ARGV[2] -> the limit key
-- ARGV[3] -> N (0: no limit)
-- ARGV[4] -> PER (µs)
-- ARGV[5] -> '1' on the first call of a change, '0' on the calls that
--   follow
-- Output: {limits set, items let go, items left to let go}
--@include keys
--@include limit_key
--@include now_ms

local W, X, R = limit_key('rw', ARGV[2]), limit_key('rx', ARGV[2]), limit_key('rr', ARGV[2])
local first = ARGV[5] == '1'
local nw = 0
if first then nw = redis.call('ZCARD', W) end
local xs = redis.call('ZRANGE', X, 0, {{SCRIPT_BATCH}} - 1)
if first and #xs < {{SCRIPT_BATCH}} then
  -- Those of the index are let go in this call too, up to the batch.
  for _, mem in ipairs(redis.call('ZRANGE', W, 0, {{SCRIPT_BATCH}} - 1 - #xs)) do xs[#xs + 1] = mem end
end
-- Every item hash is read before the first write (see the key layout).
local fs = {}
for i, mem in ipairs(xs) do fs[i] = redis.call('HMGET', ARGV[1] .. string.sub(mem, 18), 'st', 'mem', 'wt') end
local n = redis.call('HLEN', K_LIMITS)
if first then
  if ARGV[3] == '0' then
    n = n - redis.call('HDEL', K_LIMITS, ARGV[2])
  else
    n = n + redis.call('HSET', K_LIMITS, ARGV[2], ARGV[3] .. ',' .. ARGV[4])
  end
  if n > 0 then redis.call('HSET', K_SEQ, 'lim', n) else redis.call('HDEL', K_SEQ, 'lim') end
  redis.call('DEL', R)
  if nw > 0 then
    if redis.call('EXISTS', X) == 1 then
      redis.call('ZUNIONSTORE', X, 2, X, W)
      redis.call('DEL', W)
    else
      redis.call('RENAME', W, X)
    end
  end
end
local now = now_ms()
local moved = 0
for i, mem in ipairs(xs) do
  local f = fs[i]
  if f[1] == 's' and f[2] == mem and f[3] then
    redis.call('ZADD', K_SCHED, 'XX', 'LT', now, mem)
    redis.call('HDEL', ARGV[1] .. string.sub(mem, 18), 'wt')
    moved = moved + 1
  end
end
if #xs > 0 then redis.call('ZREM', X, unpack(xs)) end
if moved > 0 then redis.call('ZADD', K_WAKE, 0, 'w') end
return {n, moved, redis.call('ZCARD', X)}
