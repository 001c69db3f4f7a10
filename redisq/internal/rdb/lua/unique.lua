-- unique: a unique key's window (see unique_take). Read only.
--
-- KEYS[1] -> {dq:NAME}:u:KEY, the window's key
-- ARGV[1] -> {dq:NAME}:m:, the item hash prefix
-- ARGV[2] -> the unique key
-- Output: {now} when its window is not held, else {now, the id whose
--   enqueue took it, ms left}
--@include keys
--@include now_ms

local now = now_ms()
local k = K_PREFIX .. 'u:' .. ARGV[2]
local id = redis.call('GET', k)
if not id then return {now} end
return {now, id, redis.call('PTTL', k)}
