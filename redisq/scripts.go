package redisq

import (
	"strconv"

	"github.com/redis/go-redis/v9"
)

// scriptBatch bounds the work of one claim script whatever the options: at
// most this many expired leases and this many due items. About 2-3ms of
// server CPU on a small VM; TakeBatch runs several scripts for larger n.
const scriptBatch = 100

// maxDueMS is the latest due time stored (about year 287,000): 2^53-1 ms,
// the largest integer a Lua number (a double) holds exactly and well under
// the 1e17 from which Redis receives it as "1e+17". Due times past it are
// stored as it; minDueMS mirrors it in the past.
const (
	maxDueMS = 1<<53 - 1
	minDueMS = -maxDueMS
)

var (
	maxDueLua      = strconv.FormatInt(maxDueMS, 10)
	scriptBatchLua = strconv.Itoa(scriptBatch)
)

// The keys of a queue named NAME all carry the hash tag {dq:NAME}, so they
// live in one Cluster slot. Every script names them from ARGV[1], the item
// hash prefix "{dq:NAME}:m:" (luaKeys):
//
//	K_SCHED  {dq:NAME}:sched  zset member -> due ms
//	K_LEASE  {dq:NAME}:lease  zset member -> lease deadline ms
//	K_DEAD   {dq:NAME}:dead   zset member -> time of death ms
//	K_WAKE   {dq:NAME}:wake   marker zset (member "w")
//	K_STATS  {dq:NAME}:stats  hash of counters (Enqueued and Delivered are
//	                          derived: from seq and from late, so the hot
//	                          paths skip a write)
//	K_SEQ    {dq:NAME}:seq    hash: the sequence of members and lease tokens,
//	                          starting at Redis TIME in microseconds (see
//	                          next_seq), and "paused" while the queue is paused
//	K_TIMER  {dq:NAME}:timer  string with a TTL: who acts at the next due time
//	K_LATE   {dq:NAME}:late   hash: lateness histogram of deliveries (stats.go)
//
// plus the item hashes {dq:NAME}:m:ID, ack tombstones {dq:NAME}:a:TOKEN and
// request replies {dq:NAME}:r:RID.
//
// KEYS declares what a call touches, for Redis Cluster, and nothing more
// (see script and Queue.run): a key declared but absent while the slot
// migrates makes Redis answer TRYAGAIN before the script runs, so a key
// that most calls do not touch is not declared. The keys a script finds
// only as it runs (the item hashes behind zset members, in claims and bulk
// calls) cannot be declared: such a script reads every one of them before
// its first write of the items concerned, so that a key already moved to
// another node aborts it ("non local key") before it changed anything, and
// the call is retried like TRYAGAIN. Scripts never read KEYS.
//
// A zset member is "%016.0f" of a sequence number, ":" and the id. Equal
// scores order members lexicographically, and the zero-padded sequence makes
// that order the order of Enqueue/Reschedule/Nack: FIFO among equal due
// times. The id is string.sub(member, 18).
//
// Time always comes from redis.call('TIME'); Redis 7 replicates scripts by
// effects, so this is allowed and deterministic on replicas and in the AOF.
//
// Scores and stored times are whole milliseconds, but "never early" is kept
// to the microsecond: now_ms returns TIME rounded down to the millisecond
// (an item is due when its score <= now) and the microseconds past it, and
// after() rounds TIME + a delay in microseconds up. So a due time or lease
// deadline computed from a delay d is never before TIME + d, and the claim
// that delivers it runs at or after it.
//
// Numbers passed to redis.call are formatted with "%.17g", so any value of
// 1e17 or more would reach Redis as "1e+17", which integer arguments (SET PX)
// reject. Scores are clamped to MAXDUE (2^53-1 ms, the largest integer a Lua
// number holds exactly, about year 287,000) and the timer TTL to MAXWAIT.
var luaCommon = luaKeys + `
local MAXDUE = ` + maxDueLua + `
local MAXWAIT = 86400000
local function now_ms()
  local t = redis.call('TIME')
  local us = tonumber(t[2])
  return tonumber(t[1]) * 1000 + math.floor(us / 1000), us % 1000
end
-- after returns the first whole ms at or after now (ms) + frac (us) + d (us).
local function after(now, frac, d)
  local due = now + math.floor((frac + d + 999) / 1000)
  if due > MAXDUE then due = MAXDUE end
  return due
end
local function clamp_due(due)
  if due > MAXDUE then return MAXDUE end
  if due < -MAXDUE then return -MAXDUE end
  return due
end
-- next_seq takes k sequence numbers and returns the last. The sequence is
-- the hash K_SEQ: n the last number taken, s0 where it started, r how
-- many numbers went to items already in the queue (to_sched), so that
-- n - s0 - r counts the new items and Enqueue needs no counter of its own.
-- A new sequence (a new or destroyed queue) starts at TIME in microseconds,
-- not 1, so a queue created again never hands out a token of its previous
-- life; NEW_LIFE tells the caller, which registers the name (see
-- newScript).
local function next_seq(k)
  local seq = redis.call('HINCRBY', K_SEQ, 'n', k)
  if seq == k then
    local t = redis.call('TIME')
    local s0 = tonumber(t[1]) * 1000000 + tonumber(t[2])
    seq = s0 + k
    redis.call('HSET', K_SEQ, 'n', string.format('%d', seq), 's0', string.format('%d', s0))
    NEW_LIFE = 1
  end
  return seq
end
local function new_member(id)
  return string.format('%016.0f', next_seq(1)) .. ':' .. id
end
-- timer_deadline is the deadline the timer's owner acts at (K_TIMER holds
-- "ID|deadline ms"), or MAXDUE when nobody owns it.
local function timer_deadline()
  local v = redis.call('GET', K_TIMER)
  local bar = v and string.find(v, '|', 1, true)
  return bar and tonumber(string.sub(v, bar + 1)) or MAXDUE
end
local function arm_if_head(mem)
  local head = redis.call('ZRANGE', K_SCHED, 0, 0)
  if head[1] == mem then redis.call('ZADD', K_WAKE, 0, 'w') end
end
local function backoff(att, base, max)
  if base <= 0 or att < 1 then return 0 end
  local d = base
  for _ = 2, att do
    d = d * 2
    if d >= max then return max end
  end
  if d > max then d = max end
  return d
end
-- to_dead moves a leased/scheduled item (already removed from its zset,
-- where its member was mem) to dead, recording why it died. It takes a new
-- member, so that the dead set's members are in order of death (by time,
-- then sequence) and a sequence number taken before a bulk call tells the
-- items dead before it (see scriptBulkDead); like to_sched, the number is
-- not a new item's.
local function to_dead(h, mem, now, why, ...)
  redis.call('HINCRBY', K_SEQ, 'r', 1)
  local dm = new_member(string.sub(mem, 18))
  redis.call('ZADD', K_DEAD, now, dm)
  redis.call('HSET', h, 'st', 'd', 'mem', dm, 'tok', '', 'dl', 0, 'why', why, ...)
  redis.call('HINCRBY', K_STATS, 'dead', 1)
end
-- sched_new puts an item (already removed from its zset, or new) in sched
-- at due under a new member; extra arguments are more hash fields and
-- values to set.
local function sched_new(h, id, due, ...)
  local mem = new_member(id)
  redis.call('ZADD', K_SCHED, due, mem)
  redis.call('HSET', h, 'st', 's', 'due', due, 'mem', mem, 'tok', '', 'dl', 0, ...)
  arm_if_head(mem)
  return mem
end
-- to_sched is sched_new for an item the queue already counted: it takes a
-- sequence number that is not a new item's (see next_seq).
local function to_sched(h, id, due, ...)
  redis.call('HINCRBY', K_SEQ, 'r', 1)
  return sched_new(h, id, due, ...)
end
-- Request ids (see runOnce): the idempotent scripts get a request id as
-- their last argument and leave their reply where a rerun of the same call
-- finds it. A reply that keeps the item is stored in the item hash itself
-- (fields rq = request id, rr = reply), in the HSET the script does anyway;
-- one that deletes the item costs one SET of {dq:NAME}:r:RID with a TTL.
-- A rerun that finds the item changed by its own first run returns replay().
local function enc(r)
  local t = {}
  for i, v in ipairs(r) do t[i] = string.format('%d', v) end
  return table.concat(t, ',')
end
local function dec(v)
  local r = {}
  for x in string.gmatch(v, '[^,]+') do r[#r + 1] = tonumber(x) end
  return r
end
local function rid_key()
  return string.sub(ARGV[1], 1, -3) .. 'r:' .. ARGV[#ARGV]
end
-- done_gone stores the reply r of a call that deleted the item.
local function done_gone(r)
  redis.call('SET', rid_key(), enc(r), 'PX', ` + ackTombstoneMS + `)
  return r
end
-- replay returns the stored reply of this call's first run, or nil: rq and
-- rr are the item's fields (nil when the item is gone).
local function replay(rq, rr, gone)
  if rq == ARGV[#ARGV] and rr then return dec(rr) end
  if gone then
    local v = redis.call('GET', rid_key())
    if v then return dec(v) end
  end
  return nil
end
-- unsched takes a scheduled or dead item out of its zset, for to_sched; a
-- dead item is revived: attempts reset, reason dropped.
local function unsched(h, st, mem)
  if st == 's' then
    redis.call('ZREM', K_SCHED, mem)
  else
    redis.call('ZREM', K_DEAD, mem)
    redis.call('HSET', h, 'att', 0)
    redis.call('HDEL', h, 'why')
  end
end
`

// luaKeys names the queue's keys from ARGV[1] (see above).
const luaKeys = `
local K_PREFIX = string.sub(ARGV[1], 1, -3)
local K_SCHED, K_LEASE, K_DEAD, K_WAKE = K_PREFIX .. 'sched', K_PREFIX .. 'lease', K_PREFIX .. 'dead', K_PREFIX .. 'wake'
local K_STATS, K_SEQ, K_TIMER, K_LATE = K_PREFIX .. 'stats', K_PREFIX .. 'seq', K_PREFIX .. 'timer', K_PREFIX .. 'late'
`

// enqueue: ARGV[2] id, ARGV[3] payload, ARGV[4] "at" (ARGV[5] due ms) or
// "after" (ARGV[5] delay us). Returns {0} when the id exists, else
// {1, due, now}. O(log n).
var scriptEnqueue = newScript(luaCommon+`
local h = ARGV[1] .. ARGV[2]
if redis.call('EXISTS', h) == 1 then return {0} end
local now, frac = now_ms()
local due = tonumber(ARGV[5])
if ARGV[4] == 'after' then due = after(now, frac, due) else due = clamp_due(due) end
local mem = new_member(ARGV[2])
redis.call('HSET', h, 'p', ARGV[3], 'due', due, 'att', 0, 'st', 's', 'mem', mem, 'enq', now)
redis.call('ZADD', K_SCHED, due, mem)
arm_if_head(mem)
return {1, due, now}
`, kSched, kWake, kSeq).acked()

// enqueue many: ARGV[2] k, then k times id, payload, "at"|"after", due ms |
// delay us (as enqueue). Returns {now, due1, ..., duek} with nil (Lua false)
// for an id that exists (or repeats an earlier id of the batch). The batch
// costs one EXISTS (ids are checked one by one only when some exists), one
// HSET per new item, and for all new items one HINCRBY of the sequence and
// one ZADD; the caller keeps k <= enqueueBatch. O(k log n).
var scriptEnqueueMany = newScript(luaCommon+`
local now, frac = now_ms()
local k = tonumber(ARGV[2])
local out = {now}
local new, seen, hs = {}, {}, {}
for j = 1, k do hs[j] = ARGV[1] .. ARGV[2 + (j - 1) * 4 + 1] end
-- One EXISTS for the whole batch; only a batch with an existing id checks
-- its ids one by one.
local some = redis.call('EXISTS', unpack(hs)) > 0
for j = 1, k do
  local b = 2 + (j - 1) * 4
  local id = ARGV[b + 1]
  if seen[id] or (some and redis.call('EXISTS', hs[j]) == 1) then
    out[j + 1] = false
  else
    seen[id] = true
    local due = tonumber(ARGV[b + 4])
    if ARGV[b + 3] == 'after' then due = after(now, frac, due) else due = clamp_due(due) end
    new[#new + 1] = j
    out[j + 1] = due
  end
end
if #new == 0 then return out end
local seq = next_seq(#new) - #new
local z = {}
for i, j in ipairs(new) do
  local b = 2 + (j - 1) * 4
  local id = ARGV[b + 1]
  local mem = string.format('%016.0f', seq + i) .. ':' .. id
  redis.call('HSET', hs[j], 'p', ARGV[b + 2], 'due', out[j + 1], 'att', 0, 'st', 's', 'mem', mem, 'enq', now)
  z[#z + 1] = out[j + 1]
  z[#z + 1] = mem
end
redis.call('ZADD', K_SCHED, unpack(z))
local head = redis.call('ZRANGE', K_SCHED, 0, 0)
if head[1] and seen[string.sub(head[1], 18)] then redis.call('ZADD', K_WAKE, 0, 'w') end
return out
`, kSched, kWake, kSeq).acked()

// claim: ARGV[2] n, ARGV[3] visibility us, ARGV[4] max attempts (0 = no
// limit), ARGV[5] backoff base us, ARGV[6] backoff max us, ARGV[7] reclaim
// batch, ARGV[8] the caller's timer id (its Queue value), ARGV[9] "1" when
// the caller watches for due work this claim leaves (see timerState).
// Returns {now,
// next, timed, id, payload, attempts, due, token, deadline, ...} where next
// is ms until the earliest due item or lease deadline (-1: none, 0: work is
// waiting now; at most MAXWAIT) and timed is 1 when the caller's Queue now
// owns the timer and must act at next (claim, or ring the marker).
// Bounded whatever the arguments: at most scriptBatch expired leases and
// scriptBatch due items.
//
// The common case costs few commands: one ZRANGE reads the lease head (and
// only an expired one leads to the reclaim loop), one ZRANGE reads the due
// items together with the next head, the claimed items leave sched in one
// ZREMRANGEBYRANK and enter lease in one ZADD, each item costs one HMGET and
// one HSET, and the timer is taken with one SET ... GET. The lease token is
// the member's sequence number, unique per lease since every return to
// sched takes a new member, and across Destroy since a new sequence starts
// at Redis TIME in microseconds, past every number of the destroyed one.
var scriptClaim = newScript(luaCommon+luaLateness+`
local now, frac = now_ms()
`+luaClaim, kSched, kLease, kDead, kWake, kStats, kSeq, kTimer, kLate)

// ack and claim: the claim's ARGV[2..9], then ARGV[10] id and ARGV[11]
// token of a lease to ack first, as ack. Returns {now, -2, 0} when that
// lease is lost (nothing is claimed), else as claim: one round trip and one
// TIME for a consumer's Ack and its next Take.
var scriptAckClaim = newScript(luaCommon+luaLateness+luaAckOne+`
local now, frac = now_ms()
if ack_one(ARGV[10], ARGV[11], now) == 0 then return {now, -2, 0} end
`+luaClaim, kSched, kLease, kDead, kWake, kStats, kSeq, kTimer, kLate).acked()

// luaClaim is the body of the claim scripts, after now and frac are set
// from Redis TIME (see now_ms).
var luaClaim = `
-- A paused queue (see Pause) leases nothing and takes no timer: its
-- consumers wait on the marker, which Resume rings.
if redis.call('HEXISTS', K_SEQ, 'paused') == 1 then return {now, -1, 0} end
local mp = ARGV[1]
local n = math.min(tonumber(ARGV[2]), ` + scriptBatchLua + `)
local rearm = false
local lh = redis.call('ZRANGE', K_LEASE, 0, 0, 'WITHSCORES')
if lh[1] and tonumber(lh[2]) <= now then
  local maxatt = tonumber(ARGV[4])
  local base = tonumber(ARGV[5])
  local bmax = tonumber(ARGV[6])
  local rb = math.min(tonumber(ARGV[7]), ` + scriptBatchLua + `)
  local exp = redis.call('ZRANGEBYSCORE', K_LEASE, '-inf', now, 'LIMIT', 0, rb)
  -- Every item hash is read before the first write (see the key layout).
  local fs = {}
  for i, mem in ipairs(exp) do fs[i] = redis.call('HMGET', mp .. string.sub(mem, 18), 'att', 'can') end
  for i, mem in ipairs(exp) do
    local id = string.sub(mem, 18)
    local h = mp .. id
    redis.call('ZREM', K_LEASE, mem)
    local f = fs[i]
    local att = tonumber(f[1]) or 0
    if f[2] == '1' then
      redis.call('DEL', h)
      redis.call('HINCRBY', K_STATS, 'cancelled', 1)
    elseif maxatt > 0 and att >= maxatt then
      to_dead(h, mem, now, 'max attempts: lease expired')
    else
      to_sched(h, id, after(now, frac, backoff(att, base, bmax)))
      redis.call('HINCRBY', K_STATS, 'expired', 1)
    end
  end
  if #exp == rb then rearm = true end
  lh = redis.call('ZRANGE', K_LEASE, 0, 0, 'WITHSCORES')
end
local out = {now, -1, 0}
local sch = redis.call('ZRANGE', K_SCHED, 0, n, 'WITHSCORES')
local k = 0
while k < n and sch[2 * k + 1] and tonumber(sch[2 * k + 2]) <= now do k = k + 1 end
local dl = after(now, frac, tonumber(ARGV[3]))
if k > 0 then
  -- Every item hash is read before the first write (see the key layout).
  local fs = {}
  for i = 1, k do fs[i] = redis.call('HMGET', mp .. string.sub(sch[2 * i - 1], 18), 'p', 'att') end
  -- The first write, so that nothing is leased if it failed (it cannot:
  -- see stats.go).
  record_lateness(sch, k, now)
  local z = {}
  for i = 1, k do
    local mem = sch[2 * i - 1]
    local id = string.sub(mem, 18)
    local h = mp .. id
    local tok = string.sub(mem, 1, 16)
    local f = fs[i]
    local att = (tonumber(f[2]) or 0) + 1
    redis.call('HSET', h, 'st', 'l', 'tok', tok, 'dl', dl, 'att', att)
    z[2 * i - 1] = dl
    z[2 * i] = mem
    out[#out + 1] = id
    out[#out + 1] = f[1]
    out[#out + 1] = att
    out[#out + 1] = tonumber(sch[2 * i])
    out[#out + 1] = tok
    out[#out + 1] = dl
  end
  redis.call('ZREMRANGEBYRANK', K_SCHED, 0, k - 1)
  redis.call('ZADD', K_LEASE, unpack(z))
end
local nxt = -1
if sch[2 * k + 1] then
  local d = tonumber(sch[2 * k + 2]) - now
  -- Due work is left: wake a waiter for it, unless this claim leased
  -- items and the caller watches for it (its Queue rings the marker
  -- unless one of its consumers claims again first).
  if d <= 0 then d = 0; if n > 0 and (k == 0 or ARGV[9] ~= '1') then rearm = true end end
  nxt = d
end
local lhd = nil
if lh[1] then lhd = tonumber(lh[2]) end
if k > 0 and (not lhd or dl < lhd) then lhd = dl end
if lhd then
  local d = lhd - now
  if d < 0 then d = 0 end
  if nxt < 0 or d < nxt then nxt = d end
end
if nxt > MAXWAIT then nxt = MAXWAIT end
-- One Queue at a time owns the timer (value "ID|deadline ms") and acts at
-- the deadline; the others' waiters wait on the marker. Take it unless
-- another Queue acts no later than we would.
local timed = 0
if nxt > 0 then
  local at = now + nxt
  local old = redis.call('SET', K_TIMER, ARGV[8] .. '|' .. string.format('%d', at), 'PX', string.format('%d', nxt), 'GET')
  timed = 1
  if old then
    local bar = string.find(old, '|', 1, true)
    local odl = bar and tonumber(string.sub(old, bar + 1))
    if odl and string.sub(old, 1, bar - 1) ~= ARGV[8] and odl > now and odl <= at then
      redis.call('SET', K_TIMER, old, 'PX', string.format('%d', odl - now))
      timed = 0
    end
  end
end
if rearm then redis.call('ZADD', K_WAKE, 0, 'w') end
out[2] = nxt
out[3] = timed
return out
`

// lease check shared by nack and dead-letter: returns {0} when the caller's
// token no longer owns a live lease, unless this call (its request id, the
// last argument) already ran: then its first reply.
const luaLease = `
local h = ARGV[1] .. ARGV[2]
local f = redis.call('HMGET', h, 'st', 'tok', 'dl', 'mem', 'att', 'can', 'rq', 'rr')
local now, frac = now_ms()
if f[1] ~= 'l' or f[2] ~= ARGV[3] or tonumber(f[3]) <= now then
  return replay(f[7], f[8], not f[1]) or {0}
end
`

// luaLeaseOnly is luaLease for a call without a request id (extend).
const luaLeaseOnly = `
local h = ARGV[1] .. ARGV[2]
local f = redis.call('HMGET', h, 'st', 'tok', 'dl', 'mem')
local now, frac = now_ms()
if f[1] ~= 'l' or f[2] ~= ARGV[3] or tonumber(f[3]) <= now then return {0} end
`

// ack: ARGV[2] id, ARGV[3] token. {1} acked, {0} lease lost.
//
// A successful ack leaves a tombstone {dq:NAME}:a:TOKEN for ackTombstoneMS,
// so an ack that is run again (go-redis retries a script whose reply was
// lost to a timeout) reports success instead of ErrLeaseLost. Lease tokens
// are unique per lease, so the tombstone answers for exactly this lease.
var scriptAck = newScript(luaCommon+luaAckOne+`
local now = now_ms()
return {ack_one(ARGV[2], ARGV[3], now)}
`, kLease, kStats).acked()

// luaAckOne defines ack_one(id, tok, now): 1 when it acked the lease tok of
// item id (or an ack of it already ran: its tombstone is there), 0 when the
// lease is lost.
const luaAckOne = `
local function ack_one(id, tok, now)
  local h = ARGV[1] .. id
  local tomb = string.sub(ARGV[1], 1, -3) .. 'a:' .. tok
  local f = redis.call('HMGET', h, 'st', 'tok', 'dl', 'mem')
  if f[1] ~= 'l' or f[2] ~= tok or tonumber(f[3]) <= now then
    if redis.call('EXISTS', tomb) == 1 then return 1 end
    return 0
  end
  redis.call('ZREM', K_LEASE, f[4])
  redis.call('DEL', h)
  redis.call('HINCRBY', K_STATS, 'acked', 1)
  redis.call('SET', tomb, '1', 'PX', ` + ackTombstoneMS + `)
  return 1
end
`

// ack many: ARGV[2], ARGV[3], ... pairs of id and token. Returns {r1, ...}:
// 1 acked (or already acked: tombstone), 0 lease lost, each as ack. One
// TIME, one ZREM, one DEL and one counter update for the whole batch; the
// caller keeps it at most enqueueBatch pairs. O(k log n).
var scriptAckMany = newScript(luaCommon+`
local now = now_ms()
local tp = string.sub(ARGV[1], 1, -3) .. 'a:'
local out, mems, hs, done = {}, {}, {}, {}
for j = 2, #ARGV, 2 do
  local id, tok = ARGV[j], ARGV[j + 1]
  local h = ARGV[1] .. id
  local f = {}
  if not done[h] then f = redis.call('HMGET', h, 'st', 'tok', 'dl', 'mem') end
  if f[1] ~= 'l' or f[2] ~= tok or tonumber(f[3]) <= now then
    if done[h] == tok or redis.call('EXISTS', tp .. tok) == 1 then out[#out + 1] = 1 else out[#out + 1] = 0 end
  else
    done[h] = tok
    mems[#mems + 1] = f[4]
    hs[#hs + 1] = h
    redis.call('SET', tp .. tok, '1', 'PX', `+ackTombstoneMS+`)
    out[#out + 1] = 1
  end
end
if #hs > 0 then
  redis.call('ZREM', K_LEASE, unpack(mems))
  redis.call('DEL', unpack(hs))
  redis.call('HINCRBY', K_STATS, 'acked', #hs)
end
return out
`, kLease, kStats).acked()

// ackTombstoneMS is how long an applied ack is remembered: long enough for a
// client's own retries after a lost reply.
const ackTombstoneMS = "30000"

// nack: ARGV[2] id, ARGV[3] token, ARGV[4] delay us (-1 = backoff policy),
// ARGV[5] max attempts, ARGV[6] backoff base us, ARGV[7] backoff max us,
// ARGV[8] the caller's reason, recorded if the item dies (empty: none),
// ARGV[9] request id. {0} lease lost, {1, due} rescheduled, {2}
// dead-lettered, {3} deleted because it was cancelled while in flight; a
// rerun of the same request returns the first run's reply.
var scriptNack = newScript(luaCommon+luaLease+`
redis.call('ZREM', K_LEASE, f[4])
redis.call('HINCRBY', K_STATS, 'nacked', 1)
if f[6] == '1' then
  redis.call('DEL', h)
  redis.call('HINCRBY', K_STATS, 'cancelled', 1)
  return done_gone({3})
end
local att = tonumber(f[5]) or 0
local maxatt = tonumber(ARGV[5])
if maxatt > 0 and att >= maxatt then
  local why = 'max attempts: nacked'
  if ARGV[8] and ARGV[8] ~= '' then why = 'max attempts: ' .. ARGV[8] end
  to_dead(h, f[4], now, why, 'rq', ARGV[9], 'rr', '2')
  return {2}
end
local delay = tonumber(ARGV[4])
if delay < 0 then delay = backoff(att, tonumber(ARGV[6]), tonumber(ARGV[7])) end
local due = after(now, frac, delay)
to_sched(h, ARGV[2], due, 'rq', ARGV[9], 'rr', enc({1, due}))
return {1, due}
`, kSched, kLease, kDead, kWake, kStats, kSeq).withRID().acked()

// extend: ARGV[2] id, ARGV[3] token, ARGV[4] us. {1, deadline} or {0}.
//
// A deadline made earlier than the timer's (see timerState; an Extend
// shorter than what is left of the lease) is an event nobody acts at: the
// owner waits for its later deadline and the others wait on the marker. So
// it rings the marker, and the claim that follows takes the timer for it.
// A usual extension moves the deadline later and costs one GET more.
var scriptExtend = newScript(luaCommon+luaLeaseOnly+`
local dl = after(now, frac, tonumber(ARGV[4]))
redis.call('ZADD', K_LEASE, 'XX', dl, f[4])
redis.call('HSET', h, 'dl', dl)
if dl < tonumber(f[3]) and dl < timer_deadline() then redis.call('ZADD', K_WAKE, 0, 'w') end
return {1, dl}
`, kLease, kTimer, kWake).acked()

// cancel: ARGV[2] id, ARGV[3] request id. {0} not found, {1} removed, {2}
// in flight (marked; marking again changes nothing); a rerun of a request
// that removed the item returns {1}.
var scriptCancel = newScript(luaCommon+`
local h = ARGV[1] .. ARGV[2]
local f = redis.call('HMGET', h, 'st', 'mem')
if not f[1] then return replay(nil, nil, true) or {0} end
if f[1] == 'l' then
  redis.call('HSET', h, 'can', 1)
  return {2}
end
if f[1] == 's' then redis.call('ZREM', K_SCHED, f[2]) else redis.call('ZREM', K_DEAD, f[2]) end
redis.call('DEL', h)
redis.call('HINCRBY', K_STATS, 'cancelled', 1)
return done_gone({1})
`, kSched, kDead, kStats).withRID().acked()

// reschedule: ARGV[2] id, ARGV[3] "at" (ARGV[4] due ms) or "after" (ARGV[4]
// delay us).
// {0} not found, {1, due} moved, {2} in flight. A dead item is revived with
// attempts reset to 0.
var scriptReschedule = newScript(luaCommon+`
local h = ARGV[1] .. ARGV[2]
local f = redis.call('HMGET', h, 'st', 'mem')
if not f[1] then return {0} end
if f[1] == 'l' then return {2} end
local now, frac = now_ms()
local due = tonumber(ARGV[4])
if ARGV[3] == 'after' then due = after(now, frac, due) else due = clamp_due(due) end
unsched(h, f[1], f[2])
to_sched(h, ARGV[2], due)
redis.call('HINCRBY', K_STATS, 'rescheduled', 1)
return {1, due}
`, kSched, kDead, kWake, kStats, kSeq).acked()

// stats: {now, scheduled, due, headScore|nil, leased, dead, {k1, v1, ...}
// counters, {bound, count, ...} lateness}. The head score is nil (Lua
// false) when sched is empty: every integer is a possible score.
var scriptStats = newScript(luaCommon+`
local now = now_ms()
local head = redis.call('ZRANGE', K_SCHED, 0, 0, 'WITHSCORES')
local hs = false
if head[1] then hs = tonumber(head[2]) end
local out = {now, redis.call('ZCARD', K_SCHED), redis.call('ZCOUNT', K_SCHED, '-inf', now), hs,
  redis.call('ZCARD', K_LEASE), redis.call('ZCARD', K_DEAD)}
out[7] = redis.call('HGETALL', K_STATS)
out[8] = redis.call('HGETALL', K_LATE)
out[9] = redis.call('HMGET', K_SEQ, 'n', 's0', 'r', 'paused')
return out
`, kSched, kLease, kDead, kStats, kSeq, kLate)

// migrate converts the data of a queue stored by an earlier version, once:
// the sequence was a string (INCR) and the stats hash counted enqueued and
// delivered items. The sequence becomes the hash next_seq keeps, its start
// s0 set so that n - s0 - r is the enqueued count that version kept, and the
// two counters go (Delivered is the lateness histogram's count, which that
// version kept as well). New runs it; one TYPE when there is nothing to do.
// It returns {2}, changing nothing, when NAME is a partitioned queue (its
// table {dq:NAME}:parts exists): its items are in its partitions' queues.
var scriptMigrate = newScript(luaKeys+`
if redis.call('EXISTS', K_PREFIX .. 'parts') == 1 then return {2} end
if redis.call('TYPE', K_SEQ).ok ~= 'string' then return {0} end
local n = tonumber(redis.call('GET', K_SEQ))
local enq = tonumber(redis.call('HGET', K_STATS, 'enqueued') or '0')
redis.call('DEL', K_SEQ)
redis.call('HSET', K_SEQ, 'n', string.format('%d', n), 's0', string.format('%d', n - enq))
redis.call('HDEL', K_STATS, 'enqueued', 'delivered')
return {1}
`, kStats, kSeq)

// release: ARGV[2] timer id. A Queue closing while it owns the timer gives
// it up and wakes another waiter to take it over.
var scriptRelease = newScript(luaKeys+`
local v = redis.call('GET', K_TIMER)
if v and string.sub(v, 1, #ARGV[2] + 1) == ARGV[2] .. '|' then
  redis.call('DEL', K_TIMER)
  redis.call('ZADD', K_WAKE, 0, 'w')
end
return 1
`, kWake, kTimer)

// unblock: K_SCHED a waiter's private key. Wakes exactly that waiter's
// BZPOPMIN; the key expires on its own if the waiter already returned.
var scriptUnblock = redis.NewScript(scriptUnblockSrc)

const scriptUnblockSrc = `
redis.call('ZADD', KEYS[1], 0, 'x')
redis.call('PEXPIRE', KEYS[1], 60000)
return 1
`
