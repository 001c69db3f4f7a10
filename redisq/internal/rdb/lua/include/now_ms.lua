-- now_ms() is Redis TIME: whole milliseconds, rounded down, and the
-- microseconds past them. Time always comes from redis.call('TIME'):
-- Redis 7 replicates scripts by effects, so this is allowed and
-- deterministic on replicas and in the AOF.
--
-- Scores and stored times are whole milliseconds, but "never early" is
-- kept to the microsecond: an item is due when its score <= now, and
-- after() rounds TIME + a delay in microseconds up, so a due time or lease
-- deadline computed from a delay d is never before TIME + d, and the claim
-- that delivers it runs at or after it.

local function now_ms()
  local t = redis.call('TIME')
  local us = tonumber(t[2])
  return tonumber(t[1]) * 1000 + math.floor(us / 1000), us % 1000
end
