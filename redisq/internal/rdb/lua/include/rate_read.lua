-- Rate limits (SetRateLimit in limit.go). K_LIMITS maps a limit key (an
-- item's field lk; "" for items without one) to "N,PER": at most N claims
-- of the key's items in any PER µs of Redis TIME, that is fewer than N
-- claims in (t - PER, t] at every claim t. The sequence hash's field lim
-- counts the limits set, so a queue without any reads nothing more.
-- Per limited key, found while running:
--
--   {dq:NAME}:rl:KEY  zset    the key's claims: member -> TIME µs, trimmed
--                             to the window, expiring PER after the last
--   {dq:NAME}:rw:KEY  zset    the waiting items: member -> slot (µs); the
--                             last slot is the tail
--   {dq:NAME}:rr:KEY  string  the last slot given to a waiting item that
--                             waits again (µs), expiring at it
--   {dq:NAME}:rx:KEY  zset    the items waiting under an earlier limit,
--                             that rate_limit.lua lets go
--
-- A claim that meets a due item of a full key leaves it in sched,
-- rescored to its slot (its field wt set to the slot in ms, rounded up):
-- when the window has room again, and PER/N after the tail, so that
-- waiting items come due one by one at the limit's rate instead of all at
-- once. A new item of a key whose tail is still ahead waits behind it, so
-- waiting items go first. A waiting item that finds the window full at
-- its slot (its consumer was late, or an earlier item was) waits again
-- in its place, not behind the tail: when the window has room, and PER/N
-- after the last slot given to one that waits again, so that those do not
-- all come due at once either (whatever the claims' batch). A slot is when
-- to look again, not a promise: at its slot the claim checks the log
-- again, so the log alone decides and no claim ever exceeds the limit. An
-- item that leaves sched while it waits leaves the index too (waiting_of).
--
-- rate_read(rates, key, nowus) reads the limit of key, its log and its
-- tail, for a claim at nowus µs, once per claim (rates: key -> limit, or
-- false when the key has no limit, which rate_write then writes). Reads
-- only (see keys.lua).
--@include keys
--@include limit_key

local function rate_read(rates, key, nowus)
  local l = rates[key]
  if l ~= nil then return l end
  l = false
  local c = redis.call('HGET', K_LIMITS, key)
  local n, per = string.match(c or '', '^(%d+),(%d+)$')
  if n then
    l = {n = tonumber(n), per = tonumber(per), adm = {}, wake = {}, gone = {}}
    l.L, l.W, l.R = limit_key('rl', key), limit_key('rw', key), limit_key('rr', key)
    l.lo = string.format('%d', nowus - l.per)
    l.cnt = redis.call('ZCOUNT', l.L, '(' .. l.lo, '+inf')
    l.c0 = l.cnt
    l.tail = tonumber(redis.call('ZRANGE', l.W, -1, -1, 'WITHSCORES')[2])
    l.again = tonumber(redis.call('GET', l.R))
  end
  rates[key] = l
  return l
end
