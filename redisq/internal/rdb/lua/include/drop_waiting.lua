-- drop_waiting(id, mem, w) deletes a scheduled item (member mem, w its
-- waiting_of) that a debounced enqueue replaced (see unique_take).
--@include keys
--@include waiting_end

local function drop_waiting(id, mem, w)
  redis.call('ZREM', K_SCHED, mem)
  waiting_end(w, nil, mem)
  redis.call('DEL', ARGV[1] .. id)
end
