-- nack: gives a lease back for redelivery, after a delay or its backoff,
-- or dead-letters it at max attempts, recording the caller's reason.
--
-- KEYS[1] -> {dq:NAME}:sched
-- KEYS[2] -> {dq:NAME}:lease
-- KEYS[3] -> {dq:NAME}:dead
-- KEYS[4] -> {dq:NAME}:wake
-- KEYS[5] -> {dq:NAME}:stats
-- KEYS[6] -> {dq:NAME}:seq
-- KEYS[7] -> {dq:NAME}:m:ID, the item's hash
-- KEYS[8] -> {dq:NAME}:r:RID, the request's reply
-- ARGV[1] -> {dq:NAME}:m:, the item hash prefix
-- ARGV[2] -> the id
-- ARGV[3] -> the lease's token
-- ARGV[4] -> the delay µs (-1 = the backoff policy)
-- ARGV[5] -> max attempts, when the item has none of its own
-- ARGV[6] -> backoff base µs, when the item has none of its own
-- ARGV[7] -> backoff max µs, when the item has none of its own
-- ARGV[8] -> the caller's reason, recorded if the item dies (empty: none)
-- ARGV[9] -> the request id
-- Output: {0} lease lost, {1, due} rescheduled, {2} dead-lettered, {3}
--   deleted because it was cancelled while in flight; a rerun of the same
--   request returns the first run's reply
--@include keys
--@include after
--@include backoff
--@include conc_end
--@include conc_of
--@include done_gone
--@include enc
--@include lease_read
--@include policy
--@include replay
--@include to_dead
--@include to_sched

local h = ARGV[1] .. ARGV[2]
local lost, now, frac, mem, att, can, ma, bb, bx, cf = lease_read(h, ARGV[3], 'mem', 'att', 'can', 'ma', 'bb', 'bx', 'cf')
if lost then return replay(lost.rq, lost.rr, not lost.st) or {0} end
local c = conc_of(h, cf)
redis.call('ZREM', K_LEASE, mem)
conc_end(c, h, mem, now)
redis.call('HINCRBY', K_STATS, 'nacked', 1)
if can == '1' then
  redis.call('DEL', h)
  redis.call('HINCRBY', K_STATS, 'cancelled', 1)
  return done_gone({3})
end
att = tonumber(att) or 0
local maxatt, base, bmax = policy(ma, bb, bx, tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7]))
if maxatt > 0 and att >= maxatt then
  local why = 'max attempts: nacked'
  if ARGV[8] and ARGV[8] ~= '' then why = 'max attempts: ' .. ARGV[8] end
  to_dead(h, mem, now, why, 'rq', ARGV[9], 'rr', '2')
  return {2}
end
local delay = tonumber(ARGV[4])
if delay < 0 then delay = backoff(att, base, bmax) end
local due = after(now, frac, delay)
to_sched(h, ARGV[2], due, 'rq', ARGV[9], 'rr', enc({1, due}))
return {1, due}
