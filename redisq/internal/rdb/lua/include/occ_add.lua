-- occ_add(id, due, p, now, jf) writes an occurrence's item id, due at due,
-- with payload p, as Enqueue does: the same hash fields, the
-- registration's job jf (rec_job, as HSET arguments), a member from the
-- queue's sequence, so that Stats counts it as enqueued. Returns the
-- member.
--@include keys
--@include new_member
--@include fmt

local function occ_add(id, due, p, now, jf)
  local mem = new_member(id)
  local t = {'p', p, 'due', fmt(due), 'att', 0, 'st', 's', 'mem', mem, 'enq', fmt(now)}
  if jf then for _, v in ipairs(jf) do t[#t + 1] = v end end
  redis.call('HSET', ARGV[1] .. id, unpack(t))
  redis.call('ZADD', K_SCHED, fmt(due), mem)
  return mem
end
