-- The queue's own rate limit (SetQueueRateLimit): the sequence hash's
-- field ql is "N,PER" µs, and {dq:NAME}:ql (K_QLOG) its log, as rl:KEY is
-- a key's (see rate_read). Every claim of the queue counts in it, whatever
-- the item's limit key (a key's limits are checked too). Its window full,
-- a claim leases nothing more and leaves the due items due, in their
-- order, and its reply tells the consumers to wait until the window has
-- room: no item is rescored, and no consumer polls.
--
-- queue_rate_read(ql, nowus) parses ql, the sequence's field, and reads
-- the log for a claim at nowus, as rate_read a key's (nil: no limit).
-- Reads only.
--@include keys

local function queue_rate_read(ql, nowus)
  local n, per = string.match(ql or '', '^(%d+),(%d+)$')
  if not n then return nil end
  local l = {n = tonumber(n), per = tonumber(per), L = K_QLOG}
  l.lo = string.format('%d', nowus - l.per)
  l.cnt = redis.call('ZCOUNT', l.L, '(' .. l.lo, '+inf')
  l.c0 = l.cnt
  return l
end
