-- What the recurring scripts share, after common.lua: the registration's key, occ_add, which
-- writes an occurrence's item as Enqueue does (the same hash fields, the
-- registration's job (rec_job), a
-- member from the queue's sequence, so that Stats counts it as enqueued),
-- arm, which rings the wake marker when one of the new members is the head
-- of sched, and changed, which adds an entry to the change feed. Each
-- script declares in KEYS exactly the keys it may touch, and reads a key
-- it finds while running (an item behind the registration's id field)
-- before its first write.

local K_RECS, K_RECX = K_PREFIX .. 'recs', K_PREFIX .. 'recx'
local function rec_key(name) return K_PREFIX .. 'rec:' .. name end
local function fmt(x) return string.format('%d', x) end
local function occ_add(id, due, p, now, jf)
  local mem = new_member(id)
  local t = {'p', p, 'due', fmt(due), 'att', 0, 'st', 's', 'mem', mem, 'enq', fmt(now)}
  if jf then for _, v in ipairs(jf) do t[#t + 1] = v end end
  redis.call('HSET', ARGV[1] .. id, unpack(t))
  redis.call('ZADD', K_SCHED, fmt(due), mem)
  return mem
end
-- REC_FIELDS are a registration's job: the fields JOB_FIELDS, which every
-- occurrence gets, and op, the occurrence policy (include/occurrence.lua),
-- which the occurrences that the keepers enqueue get.
local REC_FIELDS = {'k', 'j', 'ma', 'bb', 'bx', 'ret', 'lk', 'op'}
-- rec_job(R, policy) is the job of registration R as HSET arguments, with
-- its occurrence policy when policy is set (not for an extra run or a
-- backfill, which an operator asked for).
local function rec_job(R, policy)
  local v = redis.call('HMGET', R, unpack(REC_FIELDS))
  local t = {}
  for i, f in ipairs(REC_FIELDS) do
    if v[i] and (policy or f ~= 'op') then t[#t + 1] = f; t[#t + 1] = v[i] end
  end
  return t
end
local function arm(mems)
  local head = redis.call('ZRANGE', K_SCHED, 0, 0)
  if head[1] and mems[head[1]] then redis.call('ZADD', K_WAKE, 0, 'w') end
end
local function changed(name)
  redis.call('XADD', K_RECX, 'MAXLEN', '100', '*', 'n', name)
end
