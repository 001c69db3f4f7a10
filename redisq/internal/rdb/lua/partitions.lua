-- partitions creates the partition table of a queue unless it exists and
-- returns it. Not a queue script: it reads KEYS.
--
-- KEYS[1] -> {dq:NAME}:parts, the partition table
-- KEYS[2] -> {dq:NAME}:seq, the ordinary queue's sequence key
-- ARGV[1] -> P, the number of partitions
-- ARGV[2...] -> the partitions' names
-- Output: the table (HGETALL), or {-1} when an ordinary queue of that name
--   has data (its sequence key exists) and no table

if redis.call('EXISTS', KEYS[1]) == 0 then
  if redis.call('EXISTS', KEYS[2]) == 1 then return {-1} end
  local a = {'n', ARGV[1], 'v', '1'}
  for i = 2, #ARGV do
    a[#a + 1] = 'p' .. (i - 2)
    a[#a + 1] = ARGV[i]
  end
  redis.call('HSET', KEYS[1], unpack(a))
end
return redis.call('HGETALL', KEYS[1])
