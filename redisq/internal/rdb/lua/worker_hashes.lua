-- worker hashes: ARGV[2...] worker ids. Returns per
-- worker n, h, pid, st, b, c, r, hd, l, lm ("" each when its hash is gone).
--
-- KEYS: the hashes of the workers ARGV[2...]
--@include keys

local out = {}
for i = 2, #ARGV do
  local f = redis.call('HMGET', K_PREFIX .. 'wk:' .. ARGV[i], 'n', 'h', 'pid', 'st', 'b', 'c', 'r', 'hd', 'l', 'lm')
  for j = 1, 10 do out[#out + 1] = f[j] or '' end
end
return out
