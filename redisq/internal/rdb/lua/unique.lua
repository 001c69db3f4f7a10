-- unique: ARGV[2] a unique key. Returns {now} when its window is not held,
-- else {now, the id whose enqueue took it, ms left}. Read only.
--
-- KEYS: the window's key
--@include keys
--@include now_ms

local now = now_ms()
local k = K_PREFIX .. 'u:' .. ARGV[2]
local id = redis.call('GET', k)
if not id then return {now} end
return {now, id, redis.call('PTTL', k)}
