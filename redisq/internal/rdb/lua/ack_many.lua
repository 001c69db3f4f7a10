-- ack many: ARGV[2], ARGV[3], ... pairs of id and token. Returns {r1, ...}:
-- 1 acked (or already acked: tombstone), 0 lease lost, each as ack. One
-- TIME, one ZREM, one DEL and one counter update for the whole batch; the
-- caller keeps it at most EnqueueBatch pairs. O(k log n).
--
-- KEYS: lease, stats; per lease, its item's hash and its tombstone
--@include common

local now = now_ms()
local tp = string.sub(ARGV[1], 1, -3) .. 'a:'
local out, mems, hs, done = {}, {}, {}, {}
for j = 2, #ARGV, 2 do
  local id, tok = ARGV[j], ARGV[j + 1]
  local h = ARGV[1] .. id
  local f = {}
  if not done[h] then f = redis.call('HMGET', h, 'st', 'tok', 'dl', 'mem') end
  if f[1] ~= 'l' or f[2] ~= tok or tonumber(f[3]) <= now then
    if done[h] == tok or redis.call('EXISTS', tp .. tok) == 1 then out[#out + 1] = 1 else out[#out + 1] = 0 end
  else
    done[h] = tok
    mems[#mems + 1] = f[4]
    hs[#hs + 1] = h
    redis.call('SET', tp .. tok, '1', 'PX', {{TOMB_MS}})
    out[#out + 1] = 1
  end
end
if #hs > 0 then
  redis.call('ZREM', K_LEASE, unpack(mems))
  redis.call('DEL', unpack(hs))
  redis.call('HINCRBY', K_STATS, 'acked', #hs)
end
return out
