-- beat: one worker heartbeat. Stores "now|" .. ARGV[3] as the field v of
-- the worker's hash, which lives as long as the heartbeat, and the expiry
-- in the list: four commands a beat (six with the drop), each in the
-- documented ACL rights of a consumer.
--
-- KEYS[1] -> {dq:NAME}:workers
-- KEYS[2] -> {dq:NAME}:wk:ID, this worker's hash
-- ARGV[1] -> {dq:NAME}:m:, the item hash prefix
-- ARGV[2] -> the worker id
-- ARGV[3] -> its heartbeat (fields encoded by encodeFields, see workers.go)
-- ARGV[4] -> the heartbeat's life (ms)
-- ARGV[5] -> "1" to drop the expired workers from the list too (now and
--   then: the readers skip them anyway)
-- Output: {now}
--@include keys

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local W = K_PREFIX .. 'workers'
local life = tonumber(ARGV[4])
if ARGV[5] == '1' then
  local gone = redis.call('ZRANGEBYSCORE', W, '-inf', now, 'LIMIT', 0, 100)
  if #gone > 0 then redis.call('ZREM', W, unpack(gone)) end
end
redis.call('ZADD', W, now + life, ARGV[2])
local H = K_PREFIX .. 'wk:' .. ARGV[2]
redis.call('HSET', H, 'v', string.format('%d', now) .. '|' .. ARGV[3])
redis.call('PEXPIRE', H, life)
return {now}
