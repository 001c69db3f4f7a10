-- limit state: ARGV[2...] limit keys. Returns {now µs, then for each key:
-- N (0: no limit), PER µs, claims in the window (now - PER, now], the
-- oldest of them (µs, 0: none), items waiting for a slot, the last slot
-- given to one (µs, 0: none)}. Waiting counts the index (see
-- include/rate.lua): an item cancelled or rescheduled while it waited
-- stays counted until the limit changes. Read only.
--
-- KEYS: the limits, and each key's log, waiting items and last slot
--@include common

local now, frac = now_ms()
local nowus = now * 1000 + frac
local out = {string.format('%d', nowus)}
for a = 2, #ARGV do
  local key = ARGV[a]
  local n, per = string.match(redis.call('HGET', K_LIMITS, key) or '', '^(%d+),(%d+)$')
  local L, T, W = K_PREFIX .. 'rl:' .. key, K_PREFIX .. 'rt:' .. key, K_PREFIX .. 'rw:' .. key
  local cnt, old = 0, 0
  if n then
    local lo = '(' .. string.format('%d', nowus - tonumber(per))
    cnt = redis.call('ZCOUNT', L, lo, '+inf')
    old = redis.call('ZRANGE', L, lo, '+inf', 'BYSCORE', 'LIMIT', 0, 1, 'WITHSCORES')[2] or 0
  end
  out[#out + 1] = n or 0
  out[#out + 1] = per or 0
  out[#out + 1] = cnt
  out[#out + 1] = old
  out[#out + 1] = redis.call('ZCARD', W)
  out[#out + 1] = redis.call('GET', T) or 0
end
return out
