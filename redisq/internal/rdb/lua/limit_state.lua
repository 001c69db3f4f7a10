-- limit state: each key's rate limit and its use. Waiting counts the
-- indexes (see rate_read). Read only.
--
-- KEYS[1] -> {dq:NAME}:limits, the rate limits
-- KEYS[2...] -> per key {dq:NAME}:rl:KEY, {dq:NAME}:rw:KEY,
--   {dq:NAME}:rx:KEY and {dq:NAME}:rr:KEY (see rate_read)
-- ARGV[1] -> {dq:NAME}:m:, the item hash prefix
-- ARGV[2...] -> the limit keys
-- Output: {now µs, then for each key: N (0: no limit), PER µs, claims in
--   the window (now - PER, now], the oldest of them (µs, 0: none), when the
--   window has room for a claim (µs: now while fewer than N), items
--   waiting for a slot, the last slot given to one (µs, 0: none)}
--@include keys
--@include limit_key
--@include now_ms

local now, frac = now_ms()
local nowus = now * 1000 + frac
local out = {string.format('%d', nowus)}
for a = 2, #ARGV do
  local key = ARGV[a]
  local n, per = string.match(redis.call('HGET', K_LIMITS, key) or '', '^(%d+),(%d+)$')
  local L, W, X = limit_key('rl', key), limit_key('rw', key), limit_key('rx', key)
  local cnt, old, room = 0, 0, 0
  if n then
    n, per = tonumber(n), tonumber(per)
    local lo = '(' .. string.format('%d', nowus - per)
    cnt = redis.call('ZCOUNT', L, lo, '+inf')
    old = redis.call('ZRANGE', L, lo, '+inf', 'BYSCORE', 'LIMIT', 0, 1, 'WITHSCORES')[2] or 0
    room = nowus
    if cnt >= n then
      -- The claim of rank cnt - N leaving the window makes room.
      local r = redis.call('ZRANGE', L, lo, '+inf', 'BYSCORE', 'LIMIT', cnt - n, 1, 'WITHSCORES')[2]
      room = tonumber(r) + per
    end
  end
  out[#out + 1] = n or 0
  out[#out + 1] = per or 0
  out[#out + 1] = cnt
  out[#out + 1] = old
  out[#out + 1] = string.format('%d', room)
  out[#out + 1] = redis.call('ZCARD', W) + redis.call('ZCARD', X)
  out[#out + 1] = redis.call('ZRANGE', W, -1, -1, 'WITHSCORES')[2] or 0
end
return out
