-- get: ARGV[2] id. Returns {now} when not found, else {now, item} with the
-- payload.
--
-- KEYS: the item's hash (its zset is found while running; read only)
--@include append_item
--@include now_ms
--@include zset_of

local out = {(now_ms())}
local f = redis.call('HMGET', ARGV[1] .. ARGV[2], 'st', 'mem')
if not f[1] then return out end
local score = redis.call('ZSCORE', zset_of(f[1]), f[2]) or ''
append_item(out, ARGV[2], score, true)
return out
