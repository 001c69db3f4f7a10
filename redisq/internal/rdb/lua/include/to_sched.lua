-- to_sched(h, id, due, ...) is sched_new for an item the queue already
-- counted: it takes a sequence number that is not a new item's (see
-- next_seq).
--@include keys
--@include sched_new

local function to_sched(h, id, due, ...)
  redis.call('HINCRBY', K_SEQ, 'r', 1)
  return sched_new(h, id, due, ...)
end
