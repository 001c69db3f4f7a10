-- new_member(id) is a new zset member for item id. A zset member is
-- "%016.0f" of a sequence number, ":" and the id. Equal scores order
-- members lexicographically, and the zero-padded sequence makes that order
-- the order of Enqueue/Reschedule/Nack: FIFO among equal due times. The id
-- is string.sub(member, 18), the lease token of a claimed member
-- string.sub(member, 1, 16).
--@include next_seq

local function new_member(id)
  return string.format('%016.0f', next_seq(1)) .. ':' .. id
end
