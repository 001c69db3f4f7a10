-- seen: KEYS the hashes of the registrations ARGV[2...]. Records Redis
-- TIME as their sighting (sn) in those that exist: live code registers
-- them (see Registration.Seen). Returns {the number recorded}.
--@include common
--@include rec

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
