-- release lease: hands a lease back without counting its attempt: a
-- Release (back at the due time it had) or a Snooze (due a delay after
-- TIME, and its claim taken out of its rate limit's log: it was not a
-- start). Neither nacked nor expired is counted; a snooze counts as
-- snoozed. O(log n).
--
-- KEYS[1] -> {dq:NAME}:sched
-- KEYS[2] -> {dq:NAME}:lease
-- KEYS[3] -> {dq:NAME}:wake
-- KEYS[4] -> {dq:NAME}:stats
-- KEYS[5] -> {dq:NAME}:seq
-- KEYS[6] -> {dq:NAME}:m:ID, the item's hash
-- KEYS[7] -> {dq:NAME}:r:RID, the request's reply
-- ARGV[1] -> {dq:NAME}:m:, the item hash prefix
-- ARGV[2] -> the id
-- ARGV[3] -> the lease's token
-- ARGV[4] -> -1: release; else snooze for this many µs
-- ARGV[5] -> the request id
-- Output: {0} lease lost; {1, due} back in sched, due then (ms), with the
--   lease's attempt uncounted; {3} deleted because it was cancelled while
--   in flight. A rerun of the same request returns the first run's reply.
--
-- The item goes back under a new member (to_sched), as after a Nack: the
-- member's number is the next lease's token, so the consumer that released
-- it cannot settle the next lease. A release keeps the due time it had,
-- which the claim did not change: it is due at once, ahead of every item
-- due after it, and behind the items due at the same millisecond. The
-- rate logs (the limit key's, the queue's) are found while running and
-- read before the first write (see the key layout).
--@include keys
--@include after
--@include conc_end
--@include conc_of
--@include done_gone
--@include enc
--@include lease_read
--@include rate_logs_of
--@include replay
--@include to_sched

local h = ARGV[1] .. ARGV[2]
local lost, now, frac, mem, att, can, cf = lease_read(h, ARGV[3], 'mem', 'att', 'can', 'cf')
if lost then return replay(lost.rq, lost.rr, not lost.st) or {0} end
local snooze = tonumber(ARGV[4]) >= 0
local refund = snooze and can ~= '1' and rate_logs_of(h, mem)
local c = conc_of(h, cf)
redis.call('ZREM', K_LEASE, mem)
conc_end(c, h, mem, now)
if can == '1' then
  redis.call('DEL', h)
  redis.call('HINCRBY', K_STATS, 'cancelled', 1)
  return done_gone({3})
end
att = (tonumber(att) or 1) - 1
if att < 0 then att = 0 end
local due
if snooze then
  due = after(now, frac, tonumber(ARGV[4]))
  for _, L in ipairs(refund or {}) do
    redis.call('ZREM', L, mem)
    -- Room in the queue's window, which consumers may wait for: one
    -- claims.
    if L == K_QLOG then redis.call('ZADD', K_WAKE, 0, 'w') end
  end
  redis.call('HINCRBY', K_STATS, 'snoozed', 1)
else
  due = tonumber(redis.call('HGET', h, 'due')) or now
  if due > now then due = now end
end
to_sched(h, ARGV[2], due, 'att', att, 'rq', ARGV[5], 'rr', enc({1, due}))
return {1, due}
