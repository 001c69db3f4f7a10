-- seen: records Redis TIME as the sighting (sn) of the registrations
-- named that exist: live code registers them (see Registration.Seen).
--
-- KEYS[1...] -> {dq:NAME}:rec:REG, the hash of each registration
-- ARGV[1] -> {dq:NAME}:m:, the item hash prefix
-- ARGV[2...] -> the registrations' names
-- Output: {the number recorded}
--@include fmt
--@include now_ms
--@include rec_key

local now = now_ms()
local n = 0
for i = 2, #ARGV do
  local R = rec_key(ARGV[i])
  if redis.call('EXISTS', R) == 1 then
    redis.call('HSET', R, 'sn', fmt(now))
    n = n + 1
  end
end
return {n}
