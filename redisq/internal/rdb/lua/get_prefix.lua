-- get prefix: one item, its payload cut to max bytes, and not read at all
-- (HSTRLEN sizes it) when max is 0 or it is longer than ListBytes. Its
-- zset is found while running; read only.
--
-- KEYS[1] -> {dq:NAME}:m:ID, the item's hash
-- ARGV[1] -> {dq:NAME}:m:, the item hash prefix
-- ARGV[2] -> the id
-- ARGV[3] -> max, the payload's bytes to read
-- Output: {now} when not found, else {now, item} (see append_item)
--@include append_item
--@include now_ms
--@include zset_of

local out = {(now_ms())}
local h = ARGV[1] .. ARGV[2]
local f = redis.call('HMGET', h, 'st', 'mem')
if not f[1] then return out end
local score = redis.call('ZSCORE', zset_of(f[1]), f[2]) or ''
local at = append_item(out, ARGV[2], score, false)
local size, max = out[at], tonumber(ARGV[3])
if max > 0 and size > 0 and size <= {{MAX_PREFIX_SCAN}} then
  local p = redis.call('HGET', h, 'p') or ''
  if #p > max then p = string.sub(p, 1, max) end
  out[at + 1] = p
end
return out
