-- get: one item with its payload. Its zset is found while running; read
-- only.
--
-- KEYS[1] -> {dq:NAME}:m:ID, the item's hash
-- ARGV[1] -> {dq:NAME}:m:, the item hash prefix
-- ARGV[2] -> the id
-- Output: {now} when not found, else {now, item} (see append_item)
--@include append_item
--@include now_ms
--@include zset_of

local out = {(now_ms())}
local f = redis.call('HMGET', ARGV[1] .. ARGV[2], 'st', 'mem')
if not f[1] then return out end
local score = redis.call('ZSCORE', zset_of(f[1]), f[2]) or ''
append_item(out, ARGV[2], score, true)
return out
