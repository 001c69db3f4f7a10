package redisq

import (
	"strconv"
)

// The inspection and admin scripts. They take the same KEYS and ARGV[1] as
// the scripts in scripts.go (see there), and every one does bounded work:
// O(limit · log n) for a page or batch, O(log n) for one item.

// luaItem defines append_item(out, id, score, withp): it appends one item's
// fields to out in the order itemStride documents. The lease token is never
// read.
const luaItem = `
local function zset_of(st)
  if st == 's' then return K_SCHED elseif st == 'l' then return K_LEASE end
  return K_DEAD
end
local function append_item(out, id, score, withp)
  local h = ARGV[1] .. id
  local f = redis.call('HMGET', h, 'st', 'due', 'att', 'dl', 'enq', 'can', 'why')
  out[#out + 1] = id
  out[#out + 1] = score
  for i = 1, 7 do out[#out + 1] = f[i] or '' end
  out[#out + 1] = redis.call('HSTRLEN', h, 'p')
  if withp then out[#out + 1] = redis.call('HGET', h, 'p') or '' else out[#out + 1] = '' end
end
`

// itemStride is the number of reply elements per item from append_item: id,
// zset score, st, due, att, dl, enq, can, why, payload size, payload.
const itemStride = 11

// list: ARGV[2] state code (s/l/d), ARGV[3] offset, ARGV[4] limit, ARGV[5]
// "1" for payloads, ARGV[6] "1" for reverse order, ARGV[7] a dead reason
// to filter by ("" for none). Returns {now, total, examined, {the index
// of each item among the examined members}, item...}: at
// most limit items, and with payloads it stops after the item that brings
// them to listBytes. With a reason it examines up to maxFilterScan members
// from the offset and returns those whose reason is exactly it; examined
// is how many members the page went through.
var scriptList = newScript(luaCommon + luaItem + `
local z = zset_of(ARGV[2])
local off = tonumber(ARGV[3])
local lim = tonumber(ARGV[4])
local why = ARGV[7]
local span = lim
if why ~= '' then span = ` + maxFilterScanLua + ` end
local card = redis.call('ZCARD', z)
local mems = {}
-- An offset past the end reads nothing; below it, off + span - 1 is small
-- and exact (an offset near 2^63 would reach Redis as "9.2e+18").
if off < card then
  local a, b = string.format('%d', off), string.format('%d', off + span - 1)
  if ARGV[6] == '1' then
    mems = redis.call('ZRANGE', z, a, b, 'REV', 'WITHSCORES')
  else
    mems = redis.call('ZRANGE', z, a, b, 'WITHSCORES')
  end
end
local pos = {}
local out = {now_ms(), card, 0, pos}
local bytes, n, examined = 0, 0, 0
for i = 1, #mems, 2 do
  if n >= lim then break end
  examined = examined + 1
  local id = string.sub(mems[i], 18)
  if why == '' or redis.call('HGET', ARGV[1] .. id, 'why') == why then
    append_item(out, id, mems[i + 1], ARGV[5] == '1')
    n = n + 1
    pos[n] = examined - 1
    if ARGV[5] == '1' then
      bytes = bytes + out[#out - 1]
      if bytes >= ` + listBytesLua + ` then break end
    end
  end
end
out[3] = examined
return out
`)

// maxFilterScan is how many dead items one List page with a Reason
// examines.
const maxFilterScan = MaxPage

var maxFilterScanLua = strconv.Itoa(maxFilterScan)

// dead reasons: ARGV[2] offset, ARGV[3] count (at most maxFilterScan).
// Returns {now, total dead, examined, then per reason found among the
// count dead items from offset, oldest death first: reason, count, first
// death ms, last death ms}. The item hashes are found while running; it
// does not write.
var scriptDeadReasons = newScript(luaCommon+`
local off, n = tonumber(ARGV[2]), tonumber(ARGV[3])
local card = redis.call('ZCARD', K_DEAD)
local mems = {}
if off < card then
  mems = redis.call('ZRANGE', K_DEAD, string.format('%d', off), string.format('%d', off + n - 1), 'WITHSCORES')
end
local order, by = {}, {}
for i = 1, #mems, 2 do
  local why = redis.call('HGET', ARGV[1] .. string.sub(mems[i], 18), 'why') or ''
  local at = tonumber(mems[i + 1])
  local r = by[why]
  if not r then
    r = {0, at, at}
    by[why] = r
    order[#order + 1] = why
  end
  r[1] = r[1] + 1
  if at < r[2] then r[2] = at end
  if at > r[3] then r[3] = at end
end
local out = {now_ms(), card, #mems / 2}
for _, why in ipairs(order) do
  local r = by[why]
  out[#out + 1] = why
  out[#out + 1] = r[1]
  out[#out + 1] = r[2]
  out[#out + 1] = r[3]
end
return out
`, kDead)

// listBytes bounds the payloads one List page copies: the page ends after
// the item that reaches it (Page.Next goes on from there).
const listBytes = 1 << 20

var listBytesLua = strconv.Itoa(listBytes)

// get: ARGV[2] id. Returns {now} when not found, else {now, item} with the
// payload.
var scriptGet = newScript(luaCommon + luaItem + `
local out = {(now_ms())}
local f = redis.call('HMGET', ARGV[1] .. ARGV[2], 'st', 'mem')
if not f[1] then return out end
local score = redis.call('ZSCORE', zset_of(f[1]), f[2]) or ''
append_item(out, ARGV[2], score, true)
return out
`)

// due histogram: ARGV[2] bucket width ms, ARGV[3] buckets. Returns {now,
// overdue, c1, ..., cN, later} where ci counts due times in
// (now+(i-1)w, now+iw].
var scriptDueHistogram = newScript(luaCommon+`
local now = now_ms()
local w = tonumber(ARGV[2])
local n = tonumber(ARGV[3])
local out = {now, redis.call('ZCOUNT', K_SCHED, '-inf', now)}
for i = 1, n do
  out[#out + 1] = redis.call('ZCOUNT', K_SCHED, '(' .. string.format('%d', now + (i - 1) * w),
    string.format('%d', now + i * w))
end
out[#out + 1] = redis.call('ZCOUNT', K_SCHED, '(' .. string.format('%d', now + n * w), '+inf')
return out
`, kSched)

// luaRevive defines revive(h, id, mem, now): a dead item goes back to
// sched, due now, with attempts reset.
const luaRevive = `
local function revive(h, id, mem, now)
  unsched(h, 'd', mem)
  to_sched(h, id, now)
  redis.call('HINCRBY', K_STATS, 'requeued', 1)
end
`

// dead one: ARGV[2] id, ARGV[3] "requeue"|"delete". {0} not found, {1} done,
// {2} not dead.
var scriptDeadOne = newScript(luaCommon+luaRevive+`
local h = ARGV[1] .. ARGV[2]
local f = redis.call('HMGET', h, 'st', 'mem')
if not f[1] then return {0} end
if f[1] ~= 'd' then return {2} end
if ARGV[3] == 'delete' then
  redis.call('ZREM', K_DEAD, f[2])
  redis.call('DEL', h)
  redis.call('HINCRBY', K_STATS, 'deleted', 1)
else
  revive(h, ARGV[2], f[2], (now_ms()))
end
return {1}
`, kSched, kDead, kWake, kStats, kSeq).acked()

// dead batch: ARGV[2] op ("requeue" revives, "deldead" deletes), ARGV[3]
// limit, ARGV[4] offset (items skipped by earlier batches), ARGV[5] and
// ARGV[6] the cut-off sequence number and score, empty in the first batch,
// which reads them: the dead set's last score and the sequence's last
// number. Every member of an item dead by then has a sequence number at
// most that (to_dead takes one), every later death a greater one. The batch
// reads up to limit members with scores up to the cut-off from offset, and
// handles those with a sequence number within it and, when ARGV[7] is not
// empty, whose reason of death is exactly it. Returns {examined,
// skipped, changed, cut-off sequence, cut-off score} (the cut-offs empty
// when nothing was dead).
var scriptBulkDead = newScript(luaCommon+luaRevive+`
local op = ARGV[2]
local cs, cscore = ARGV[5], ARGV[6]
if cs == '' then
  local last = redis.call('ZRANGE', K_DEAD, -1, -1, 'WITHSCORES')
  if not last[1] then return {0, 0, 0, '', ''} end
  cs = redis.call('HGET', K_SEQ, 'n') or '0'
  cscore = last[2]
end
local cut = string.format('%016.0f', tonumber(cs))
local mems = redis.call('ZRANGEBYSCORE', K_DEAD, '-inf', cscore, 'LIMIT', ARGV[4], ARGV[3])
-- Every item hash is read before the first write (see the key layout).
local why = ARGV[7]
local whys = {}
for i, mem in ipairs(mems) do
  if why ~= '' then
    whys[i] = redis.call('HGET', ARGV[1] .. string.sub(mem, 18), 'why') or ''
  else
    redis.call('EXISTS', ARGV[1] .. string.sub(mem, 18))
  end
end
local now = now_ms()
local skipped, changed = 0, 0
for i, mem in ipairs(mems) do
  if string.sub(mem, 1, 16) > cut or (why ~= '' and whys[i] ~= why) then
    skipped = skipped + 1
  else
    local id = string.sub(mem, 18)
    local h = ARGV[1] .. id
    if op == 'requeue' then
      revive(h, id, mem, now)
    else
      redis.call('ZREM', K_DEAD, mem)
      redis.call('DEL', h)
    end
    changed = changed + 1
  end
end
if op == 'deldead' then redis.call('HINCRBY', K_STATS, 'deleted', changed) end
return {#mems, skipped, changed, cs, cscore}
`, kSched, kDead, kWake, kStats, kSeq).acked()

// batch: ARGV[2] op, ARGV[3] limit, ARGV[4] offset (mark only). Ops:
// "purge_s" deletes the first scheduled items, "mark" marks in-flight items
// from offset as cancelled, "destroy_s"/"destroy_l"/"destroy_d" delete the
// first items of a state and count the keys deleted (Destroy: the item
// hashes, and the zset when the batch empties it). Returns {examined, size
// of the zset before, changed}.
var scriptBulk = newScript(luaCommon + `
local op = ARGV[2]
local lim = tonumber(ARGV[3])
local off = tonumber(ARGV[4])
local z = K_DEAD
if op == 'purge_s' or op == 'destroy_s' then z = K_SCHED
elseif op == 'mark' or op == 'destroy_l' then z = K_LEASE end
if op ~= 'mark' then off = 0 end
local card = redis.call('ZCARD', z)
local mems = {}
if off < card then
  mems = redis.call('ZRANGE', z, string.format('%d', off), string.format('%d', off + lim - 1))
end
-- Every item hash is read before the first write (see the key layout).
for _, mem in ipairs(mems) do redis.call('EXISTS', ARGV[1] .. string.sub(mem, 18)) end
local changed = 0
for _, mem in ipairs(mems) do
  local id = string.sub(mem, 18)
  local h = ARGV[1] .. id
  if op == 'mark' then
    if redis.call('HGET', h, 'can') ~= '1' then
      redis.call('HSET', h, 'can', 1)
      changed = changed + 1
    end
  elseif op == 'purge_s' then
    redis.call('ZREM', z, mem)
    redis.call('DEL', h)
    changed = changed + 1
  else
    redis.call('ZREM', z, mem)
    changed = changed + redis.call('DEL', h)
  end
end
if op == 'purge_s' then
  redis.call('HINCRBY', K_STATS, 'deleted', changed)
elseif op ~= 'mark' and #mems > 0 and #mems == card then
  changed = changed + 1 -- destroy emptied the zset, which deletes it
end
return {#mems, card, changed}
`).acked()

// schedule (upsert): ARGV[2] id, ARGV[3] payload, ARGV[4] "at" (ARGV[5] due
// ms) or "after" (ARGV[5] delay us), ARGV[6] request id. {1, due} created,
// {3, due} replaced (a dead item is revived with attempts reset), {2} in
// flight (nothing changed); a rerun of the same request returns the first
// run's reply.
var scriptSchedule = newScript(luaCommon+`
local h = ARGV[1] .. ARGV[2]
local f = redis.call('HMGET', h, 'st', 'mem', 'rq', 'rr')
local again = replay(f[3], f[4], false)
if again then return again end
if f[1] == 'l' then return {2} end
local now, frac = now_ms()
local due = tonumber(ARGV[5])
if ARGV[4] == 'after' then due = after(now, frac, due) else due = clamp_due(due) end
if not f[1] then
  redis.call('HSET', h, 'p', ARGV[3], 'att', 0, 'enq', now)
  sched_new(h, ARGV[2], due, 'rq', ARGV[6], 'rr', enc({1, due}))
  return {1, due}
end
unsched(h, f[1], f[2])
redis.call('HSET', h, 'p', ARGV[3])
to_sched(h, ARGV[2], due, 'rq', ARGV[6], 'rr', enc({3, due}))
redis.call('HINCRBY', K_STATS, 'rescheduled', 1)
return {3, due}
`, kSched, kDead, kWake, kStats, kSeq).acked()

// dead-letter: ARGV[2] id, ARGV[3] token, ARGV[4] reason, ARGV[5] request
// id. {0} lease lost, {2} dead-lettered, {3} deleted because it was cancelled
// while in flight; a rerun of the same request returns the first run's reply.
var scriptDeadLetter = newScript(luaCommon+luaLease+`
redis.call('ZREM', K_LEASE, f[4])
if f[6] == '1' then
  redis.call('DEL', h)
  redis.call('HINCRBY', K_STATS, 'cancelled', 1)
  return done_gone({3})
end
to_dead(h, f[4], now, ARGV[4], 'rq', ARGV[5], 'rr', '2')
return {2}
`, kLease, kDead, kStats, kSeq).withRID().acked()

// run now: KEYS the item's hash, and for an id that names an occurrence
// (ARGV[3] not empty) the registration's hash and the extra run's item.
// ARGV[2] id, ARGV[3] the registration name the id names ("" if none),
// ARGV[4] the extra run's id, ARGV[5] the Redis time (ms) it is named
// after and due at. Returns {0} not found, {2} in flight, {1, due} moved to due now,
// {3, due} a dead item revived, {4, due} already due (left in place), {5}
// the extra run's id exists (name it after another ms), {6, due} an extra
// run enqueued for the registration's pending occurrence, which is left in
// place.
var scriptRunNow = newScript(luaRec+luaRevive+`
local h = ARGV[1] .. ARGV[2]
local f = redis.call('HMGET', h, 'st', 'mem', 'due', 'p')
if not f[1] then return {0} end
if f[1] == 'l' then return {2} end
local now = now_ms()
if f[1] == 'd' then
  revive(h, ARGV[2], f[2], now)
  return {3, now}
end
local due = tonumber(f[3])
if due <= now then return {4, due} end
if ARGV[3] ~= '' then
  local R = rec_key(ARGV[3])
  if redis.call('HGET', R, 'id') == ARGV[2] then
    if redis.call('EXISTS', ARGV[1] .. ARGV[4]) == 1 then return {5} end
    -- Due at the time it is named after: TIME read just before.
    local at = tonumber(ARGV[5])
    local m = {}
    m[occ_add(ARGV[4], at, f[4] or '', now)] = true
    arm(m)
    redis.call('HSET', R, 'rn', fmt(at))
    return {6, at}
  end
end
unsched(h, 's', f[2])
to_sched(h, ARGV[2], now)
redis.call('HINCRBY', K_STATS, 'rescheduled', 1)
return {1, now}
`, kSched, kDead, kWake, kStats, kSeq).acked()
