-- next_seq(k) takes k sequence numbers and returns the last. The sequence
-- is the hash K_SEQ: n the last number taken, s0 where it started, r how
-- many numbers went to items already in the queue (to_sched), so that
-- n - s0 - r counts the new items and Enqueue needs no counter of its own.
-- A new sequence (a new or destroyed queue) starts at TIME in
-- microseconds, not 1, so a queue created again never hands out a token of
-- its previous life; NEW_LIFE tells the caller, which registers the name
-- (see lifeWrap in lua.go).
--@include keys

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
