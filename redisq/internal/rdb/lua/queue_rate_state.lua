-- queue rate state: the queue's own rate limit and its use, as
-- limit_state.lua reads a key's. Read only.
--
-- KEYS[1] -> {dq:NAME}:seq
-- KEYS[2] -> {dq:NAME}:ql, the limit's log
-- ARGV[1] -> {dq:NAME}:m:, the item hash prefix
-- Output: {now µs, N (0: no limit), PER µs, claims in the window (now -
--   PER, now], the oldest of them (µs, 0: none), when the window has room
--   for a claim (µs: now while fewer than N)}
--@include keys
--@include now_ms
--@include queue_rate_read
--@include rate_room

local now, frac = now_ms()
local nowus = now * 1000 + frac
local l = queue_rate_read(redis.call('HGET', K_SEQ, 'ql'), nowus)
if not l then return {string.format('%d', nowus), 0, 0, 0, 0, 0} end
local old = redis.call('ZRANGE', l.L, '(' .. l.lo, '+inf', 'BYSCORE', 'LIMIT', 0, 1, 'WITHSCORES')[2] or 0
local room = nowus
if l.cnt >= l.n then room = rate_room(l, nowus) end
return {string.format('%d', nowus), l.n, l.per, l.cnt, old, string.format('%d', room)}
