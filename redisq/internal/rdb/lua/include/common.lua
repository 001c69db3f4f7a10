-- What every queue script shares: the conventions, and the helpers below.
--
-- The keys (their layout: Keys in keys.go) are named from ARGV[1], the
-- item hash prefix "{dq:NAME}:m:" (keys.lua). KEYS declares what a call
-- touches, for Redis Cluster, and nothing more: a key declared but absent
-- while the slot migrates makes Redis answer TRYAGAIN before the script
-- runs, so a key that most calls do not touch is not declared. The keys a
-- script finds only as it runs (the item hashes behind zset members, in
-- claims and bulk calls) cannot be declared: such a script reads every one
-- of them before its first write of the items concerned, so that a key
-- already moved to another node aborts it ("non local key") before it
-- changed anything, and the call is retried like TRYAGAIN. The queue
-- scripts never read KEYS (the three that are not queue scripts,
-- partitions.lua, unblock.lua and stop_feed.lua, do).
--
-- A zset member is "%016.0f" of a sequence number, ":" and the id. Equal
-- scores order members lexicographically, and the zero-padded sequence makes
-- that order the order of Enqueue/Reschedule/Nack: FIFO among equal due
-- times. The id is string.sub(member, 18).
--
-- Time always comes from redis.call('TIME'); Redis 7 replicates scripts by
-- effects, so this is allowed and deterministic on replicas and in the AOF.
--
-- Scores and stored times are whole milliseconds, but "never early" is kept
-- to the microsecond: now_ms returns TIME rounded down to the millisecond
-- (an item is due when its score <= now) and the microseconds past it, and
-- after() rounds TIME + a delay in microseconds up. So a due time or lease
-- deadline computed from a delay d is never before TIME + d, and the claim
-- that delivers it runs at or after it.
--
-- Numbers passed to redis.call are formatted with "%.17g", so any value of
-- 1e17 or more would reach Redis as "1e+17", which integer arguments (SET PX)
-- reject. Scores are clamped to MAXDUE (2^53-1 ms, the largest integer a Lua
-- number holds exactly, about year 287,000) and the timer TTL to MAXWAIT.
--@include keys

local MAXDUE = {{MAXDUE}}
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
  redis.call('SET', rid_key(), enc(r), 'PX', {{TOMB_MS}})
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
-- Concurrency limits (SetConcurrencyLimit in limit.go; the claim's side
-- is include/conc.lua). K_CONC maps a limit key to K: at most K of the
-- key's items hold a place at once (K "0": the limit is being removed,
-- and its waiting items are let go). Per limited key, found while
-- running:
--
--   {dq:NAME}:cf:KEY  zset  the key's leased items that hold a place:
--                           member -> lease deadline (ms), so that an
--                           expired lease frees its place even before it
--                           is reclaimed; the item has the field cf
--   {dq:NAME}:cq:KEY  zset  the items waiting for a place: member -> its
--                           turn (claim ms * 1000 + its rank in the
--                           claim); each is scheduled at MAXDUE, never due
--                           on its own, and has the field cq = 1
--   {dq:NAME}:cp:KEY  zset  the items given a place and made due, not yet
--                           leased: member -> its turn; cq = 2
--
-- The places taken are the live members of cf and the members of cp.
-- When a place frees (an ack, nack, dead letter, release, an expired
-- lease reclaimed, a waiting item leaving, a higher limit), conc_promote
-- moves the first waiting items to cp, due now, one per free place, and
-- they are claimed like any due item: no process polls for a place.
--
-- conc_keys(key) are the key's zsets.
local function conc_keys(key)
  return {F = K_PREFIX .. 'cf:' .. key, Q = K_PREFIX .. 'cq:' .. key, P = K_PREFIX .. 'cp:' .. key}
end
-- conc_of(h, f) reads, before the first write, what freeing the place of
-- the item h, or ending its wait, needs (f: its field cf or cq): nil when
-- it has neither.
local function conc_of(h, f)
  if not f then return nil end
  local key = redis.call('HGET', h, 'lk') or ''
  local c = conc_keys(key)
  c.k = tonumber(redis.call('HGET', K_CONC, key))
  redis.call('EXISTS', c.F, c.Q, c.P, K_SCHED, K_WAKE)
  return c
end
-- conc_promote gives the free places of c's key to its first waiting
-- items: each moves from cq to cp and is made due now. A member no longer
-- in sched is dropped. While the limit is being removed (K 0), up to 100
-- waiting items go at each call, due now as items of a key without a
-- limit. Bounded: 1,000 items.
local function conc_promote(c, now)
  if not c.k then return end
  now = now or now_ms()
  local free = 100
  if c.k > 0 then
    free = c.k - redis.call('ZCOUNT', c.F, '(' .. string.format('%d', now), '+inf') - redis.call('ZCARD', c.P)
  end
  local woke = false
  for _ = 1, 10 do
    if free <= 0 then break end
    local ws = redis.call('ZRANGE', c.Q, 0, math.min(free, 100) - 1, 'WITHSCORES')
    if #ws == 0 then break end
    for i = 1, #ws, 2 do
      local mem = ws[i]
      local h = ARGV[1] .. string.sub(mem, 18)
      redis.call('ZREM', c.Q, mem)
      if redis.call('ZADD', K_SCHED, 'XX', 'CH', now, mem) == 1 then
        if c.k > 0 then
          redis.call('ZADD', c.P, ws[i + 1], mem)
          redis.call('HSET', h, 'cq', 2)
        else
          redis.call('HDEL', h, 'cq')
        end
        free, woke = free - 1, true
      end
    end
    if c.k == 0 then break end
  end
  if woke then redis.call('ZADD', K_WAKE, 0, 'w') end
end
-- conc_end frees the place of the lease of member mem (h its hash, or nil
-- when the item is gone), c its conc_of.
local function conc_end(c, h, mem, now)
  if not c then return end
  redis.call('ZREM', c.F, mem)
  if h then redis.call('HDEL', h, 'cf') end
  conc_promote(c, now)
end
-- An item waiting for its rate slot (see include/rate.lua) has the field
-- wt and its member in its limit key's waiting indexes, rw:KEY (and rx:KEY
-- while a change of limit lets them go); one waiting for a place under a
-- concurrency limit, or given one, has the field cq and its member in
-- cq:KEY or cp:KEY. A script
-- that takes a scheduled item out of sched calls waiting_of(h) with its
-- reads, before its first write, since it reads the indexes, found while
-- running: it returns the item's indexes, or nil when the item waits for
-- nothing. waiting_end then takes the item out of them (a waiting item
-- made due may be leaving a free place: the next one is made due) and,
-- for an item that stays (keep), drops wt and cq, so that it waits again
-- only if a claim finds its key over a limit.
local function waiting_of(h)
  local f = redis.call('HMGET', h, 'wt', 'lk', 'cq')
  if not f[1] and not f[3] then return nil end
  local key = f[2] or ''
  local w = {K_PREFIX .. 'rw:' .. key, K_PREFIX .. 'rx:' .. key}
  redis.call('EXISTS', w[1], w[2])
  if f[3] then w.c = conc_of(h, f[3]) end
  return w
end
local function waiting_end(w, h, mem, keep)
  if not w then return end
  redis.call('ZREM', w[1], mem)
  redis.call('ZREM', w[2], mem)
  if keep then redis.call('HDEL', h, 'wt', 'cq') end
  if w.c then
    redis.call('ZREM', w.c.Q, mem)
    redis.call('ZREM', w.c.P, mem)
    conc_promote(w.c)
  end
end
-- unsched takes a scheduled, dead or completed item out of its zset, for
-- to_sched; a dead or completed item is revived: attempts reset, reason or
-- result dropped. w is a scheduled item's waiting_of.
local function unsched(h, st, mem, w)
  -- An operator's move of a recurring occurrence (include/occurrence.lua)
  -- runs it: its registration's occurrence policy no longer applies.
  redis.call('HDEL', h, 'op')
  if st == 's' then
    redis.call('ZREM', K_SCHED, mem)
    waiting_end(w, h, mem, true)
  elseif st == 'c' then
    -- A completed item runs again: it no longer expires.
    redis.call('ZREM', K_DONE, mem)
    redis.call('PERSIST', h)
    redis.call('HSET', h, 'att', 0)
    redis.call('HDEL', h, 'fin', 'res')
  else
    redis.call('ZREM', K_DEAD, mem)
    redis.call('HSET', h, 'att', 0)
    redis.call('HDEL', h, 'why')
  end
end
-- Job fields (Job in job.go): k the kind, j what only Go reads, ma max
-- attempts, bb and bx the backoff base and max (µs), ret the retention
-- (ms), lk the limit key (see rate.lua and conc.lua). A script takes a job as ARGV[b], the number of fields set, and
-- then each one's name and value (so ARGV[b + 2n + 1] follows a job of n
-- fields): job_fields appends them to t as HSET arguments and returns t.
local JOB_FIELDS = {'k', 'j', 'ma', 'bb', 'bx', 'ret', 'lk'}
local function job_fields(b, t)
  for i = b + 1, b + 2 * tonumber(ARGV[b]) do t[#t + 1] = ARGV[i] end
  return t
end
-- job_get returns the value of field f of the job at ARGV[b], or nil.
local function job_get(b, f)
  for i = b + 1, b + 2 * tonumber(ARGV[b]), 2 do
    if ARGV[i] == f then return ARGV[i + 1] end
  end
  return nil
end
-- Uniqueness windows (see Unique and Debounce in job.go): an enqueue with
-- a unique key takes the key's window {dq:NAME}:u:KEY, a string holding
-- the id of the item that took it, expiring window ms later. A unique
-- enqueue (mode 'u') is refused while the window is held; a debounced one
-- (mode 'd') replaces the item holding it if that item still waits
-- (scheduled), and takes the window again from now.
--
-- unique_take(key, window, id) takes key's window for item id unless it
-- is held: false then. A key "" takes nothing.
local function unique_take(key, window, id)
  if key == '' then return true end
  return redis.call('SET', K_PREFIX .. 'u:' .. key, id, 'NX', 'PX', window) ~= false
end
-- window_holder(key) is the id, member and waiting_of of the scheduled
-- item holding key's window, or nil. It reads that item's hash, found
-- while running.
local function window_holder(key)
  local id = redis.call('GET', K_PREFIX .. 'u:' .. key)
  if not id then return nil end
  local f = redis.call('HMGET', ARGV[1] .. id, 'st', 'mem')
  if f[1] ~= 's' then return nil end
  return id, f[2], waiting_of(ARGV[1] .. id)
end
-- window_set gives key's window to id for window ms from now.
local function window_set(key, window, id)
  redis.call('SET', K_PREFIX .. 'u:' .. key, id, 'PX', window)
end
-- drop_waiting deletes a scheduled item that a debounced enqueue replaced.
local function drop_waiting(id, mem, w)
  redis.call('ZREM', K_SCHED, mem)
  waiting_end(w, nil, mem)
  redis.call('DEL', ARGV[1] .. id)
end
-- policy returns an item's max attempts and backoff: its own (the values
-- of its fields ma, bb, bx) where set, else the caller's.
local function policy(ma, bb, bx, dma, dbb, dbx)
  return tonumber(ma) or dma, tonumber(bb) or dbb, tonumber(bx) or dbx
end
-- complete(h, mem, ret, now, res): an acked item, out of its lease
-- already, whose job keeps it ret ms (field ret) stays, completed, until
-- now + ret: in K_DONE under its member, scored by that expiry, with its
-- result res and the time fin of the ack. Its hash expires then, and
-- K_DONE with its last member, so nothing is left behind whether or not
-- anything runs again; each call also removes up to 10 members whose time
-- has passed (their hashes are gone), so K_DONE holds about the items
-- kept. The caller reads K_DONE (EXISTS) before its first write: K_DONE
-- is not declared (see the key layout).
local function complete(h, mem, ret, now, res)
  local e = string.format('%d', math.min(now + ret, MAXDUE))
  redis.call('HSET', h, 'st', 'c', 'tok', '', 'dl', 0, 'fin', string.format('%d', now), 'res', res)
  redis.call('PEXPIREAT', h, e)
  redis.call('ZADD', K_DONE, e, mem)
  local old = redis.call('ZRANGE', K_DONE, '-inf', string.format('%d', now), 'BYSCORE', 'LIMIT', 0, 10)
  if #old > 0 then redis.call('ZREM', K_DONE, unpack(old)) end
  local top = redis.call('ZRANGE', K_DONE, -1, -1, 'WITHSCORES')
  redis.call('PEXPIREAT', K_DONE, top[2])
end
