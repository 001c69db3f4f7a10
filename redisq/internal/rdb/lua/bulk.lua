-- batch: one batch of an operation on the first items of a zset. Ops:
-- "purge_s"/"purge_c" delete the first scheduled/completed items, "mark"
-- marks in-flight items from offset as cancelled,
-- "destroy_s"/"destroy_l"/"destroy_d"/"destroy_c" delete the first items
-- of a state and count the keys deleted (Destroy: the item hashes, and the
-- zset when the batch empties it). The item hashes are found while
-- running.
--
-- KEYS[1] -> the op's zset: {dq:NAME}:sched (purge_s, destroy_s),
--   {dq:NAME}:done (purge_c, destroy_c), {dq:NAME}:lease (mark, destroy_l)
--   or {dq:NAME}:dead (destroy_d)
-- KEYS[2...] -> {dq:NAME}:stats for purge_s and purge_c
-- ARGV[1] -> {dq:NAME}:m:, the item hash prefix
-- ARGV[2] -> the op
-- ARGV[3] -> the limit: members to examine
-- ARGV[4] -> the offset (mark only)
-- Output: {examined, size of the zset before, changed}
--@include keys
--@include waiting_end
--@include waiting_of

local op = ARGV[2]
local lim = tonumber(ARGV[3])
local off = tonumber(ARGV[4])
local z = K_DEAD
if op == 'purge_s' or op == 'destroy_s' then z = K_SCHED
elseif op == 'purge_c' or op == 'destroy_c' then z = K_DONE
elseif op == 'mark' or op == 'destroy_l' then z = K_LEASE end
if op ~= 'mark' then off = 0 end
local card = redis.call('ZCARD', z)
local mems = {}
if off < card then
  mems = redis.call('ZRANGE', z, string.format('%d', off), string.format('%d', off + lim - 1))
end
-- Every item hash is read before the first write (see the key layout),
-- and so is the waiting index of a purged item that waits for its rate slot.
local ws = {}
for i, mem in ipairs(mems) do
  local h = ARGV[1] .. string.sub(mem, 18)
  if op == 'purge_s' then ws[i] = waiting_of(h) or false else redis.call('EXISTS', h) end
end
local changed = 0
for i, mem in ipairs(mems) do
  local id = string.sub(mem, 18)
  local h = ARGV[1] .. id
  if op == 'mark' then
    if redis.call('HGET', h, 'can') ~= '1' then
      redis.call('HSET', h, 'can', 1)
      changed = changed + 1
    end
  elseif op == 'purge_s' then
    waiting_end(ws[i] or nil, h, mem)
    redis.call('ZREM', z, mem)
    redis.call('DEL', h)
    changed = changed + 1
  elseif op == 'purge_c' or op == 'destroy_c' then
    -- A member whose hash has expired is no item any more, and its id may
    -- name a new item since: delete only the hash that is this member's.
    redis.call('ZREM', z, mem)
    if redis.call('HGET', h, 'mem') == mem then changed = changed + redis.call('DEL', h) end
  else
    redis.call('ZREM', z, mem)
    changed = changed + redis.call('DEL', h)
  end
end
if op == 'purge_s' or op == 'purge_c' then
  redis.call('HINCRBY', K_STATS, 'deleted', changed)
elseif op ~= 'mark' and #mems > 0 and #mems == card then
  changed = changed + 1 -- destroy emptied the zset, which deletes it
end
return {#mems, card, changed}
