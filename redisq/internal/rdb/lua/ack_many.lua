-- ack many: acks leases as ack does, each in turn. One TIME, one ZREM,
-- one DEL and one counter update for the whole batch (and a complete for
-- each retained item: done, touched only for those, is read before the
-- first write and not declared); the caller keeps it at most EnqueueBatch
-- triples. O(k log n).
--
-- KEYS[1] -> {dq:NAME}:lease
-- KEYS[2] -> {dq:NAME}:stats
-- KEYS[3...] -> per lease {dq:NAME}:m:ID, its item's hash, and
--   {dq:NAME}:a:TOKEN, its tombstone
-- ARGV[1] -> {dq:NAME}:m:, the item hash prefix
-- ARGV[2...] -> per lease its id, its token and the result to keep if the
--   item is retained
-- Output: {r1, ...}: 1 acked (or already acked: tombstone), 0 lease lost
--@include keys
--@include complete
--@include conc_end
--@include conc_of
--@include now_ms

local now = now_ms()
local tp = string.sub(ARGV[1], 1, -3) .. 'a:'
local fs, keep = {}, false
for j = 2, #ARGV, 3 do
  local st, tok, dl, mem, ret, can, cf = unpack(redis.call('HMGET', ARGV[1] .. ARGV[j], 'st', 'tok', 'dl', 'mem', 'ret', 'can', 'cf'))
  if can ~= '1' and ret then keep = true end
  fs[j] = {st = st, tok = tok, dl = dl, mem = mem, ret = ret, can = can, c = conc_of(ARGV[1] .. ARGV[j], cf)}
end
if keep then redis.call('EXISTS', K_DONE) end
local out, mems, hs, done = {}, {}, {}, {}
for j = 2, #ARGV, 3 do
  local id, tok = ARGV[j], ARGV[j + 1]
  local h = ARGV[1] .. id
  local f = {}
  if not done[h] then f = fs[j] end
  if f.st ~= 'l' or f.tok ~= tok or tonumber(f.dl) <= now then
    if done[h] == tok or redis.call('EXISTS', tp .. tok) == 1 then out[#out + 1] = 1 else out[#out + 1] = 0 end
  else
    done[h] = tok
    mems[#mems + 1] = f.mem
    local ret = f.can ~= '1' and tonumber(f.ret)
    conc_end(f.c, h, f.mem, now)
    if ret then complete(h, f.mem, ret, now, ARGV[j + 2]) else hs[#hs + 1] = h end
    redis.call('SET', tp .. tok, '1', 'PX', {{TOMB_MS}})
    out[#out + 1] = 1
  end
end
if #mems > 0 then
  redis.call('ZREM', K_LEASE, unpack(mems))
  if #hs > 0 then redis.call('DEL', unpack(hs)) end
  redis.call('HINCRBY', K_STATS, 'acked', #mems)
end
return out
