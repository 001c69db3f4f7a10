-- seen: ARGV[2...] registration names. Records Redis TIME as the
-- sighting (sn) of those that exist: live code registers them (see
-- Registration.Seen). Returns {the number recorded}.
--
-- KEYS: the hashes of the registrations ARGV[2...]
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
