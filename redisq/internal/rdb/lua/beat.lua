-- beat: ARGV[2] worker id,
-- ARGV[3] name, ARGV[4] host, ARGV[5] pid, ARGV[6] concurrency, ARGV[7]
-- running, ARGV[8] held, ARGV[9] leases, ARGV[10] more leases, ARGV[11]
-- the heartbeat's life (ms). Returns {now}.
--
-- KEYS: the worker zset and this worker's hash
--@include keys

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local W, H = K_PREFIX .. 'workers', K_PREFIX .. 'wk:' .. ARGV[2]
local life = tonumber(ARGV[11])
local gone = redis.call('ZRANGEBYSCORE', W, '-inf', now, 'LIMIT', 0, 100)
if #gone > 0 then redis.call('ZREM', W, unpack(gone)) end
redis.call('ZADD', W, now + life, ARGV[2])
if redis.call('HEXISTS', H, 'st') == 0 then redis.call('HSET', H, 'st', now) end
redis.call('HSET', H, 'n', ARGV[3], 'h', ARGV[4], 'pid', ARGV[5], 'c', ARGV[6], 'r', ARGV[7],
  'hd', ARGV[8], 'l', ARGV[9], 'lm', ARGV[10], 'b', now)
redis.call('PEXPIRE', H, life)
return {now}
