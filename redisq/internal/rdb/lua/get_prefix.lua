-- get prefix: ARGV[2] id, ARGV[3] max. Returns {now} when not found, else
-- {now, item} where the payload is cut to max bytes, and not read at all
-- (HSTRLEN sizes it) when max is 0 or it is longer than ListBytes.
--
-- KEYS: the item's hash (its zset is found while running; read only)
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
