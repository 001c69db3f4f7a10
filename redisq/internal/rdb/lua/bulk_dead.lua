-- dead batch: requeues (revive) or deletes dead items. The first batch
-- reads the cut-off, the dead set's last score and the sequence's last
-- number: every member of an item dead by then has a sequence number at
-- most that (to_dead takes one), every later death a greater one. The
-- batch reads up to limit members with scores up to the cut-off from
-- offset, and handles those with a sequence number within it and, with a
-- reason, whose reason of death is exactly it. The item hashes are found
-- while running.
--
-- KEYS[1] -> {dq:NAME}:sched
-- KEYS[2] -> {dq:NAME}:dead
-- KEYS[3] -> {dq:NAME}:wake
-- KEYS[4] -> {dq:NAME}:stats
-- KEYS[5] -> {dq:NAME}:seq
-- ARGV[1] -> {dq:NAME}:m:, the item hash prefix
-- ARGV[2] -> the op: "requeue" revives, "deldead" deletes
-- ARGV[3] -> the limit: members to examine
-- ARGV[4] -> the offset: members skipped by earlier batches
-- ARGV[5] -> the cut-off sequence number ("" in the first batch)
-- ARGV[6] -> the cut-off score ("" in the first batch)
-- ARGV[7] -> the reason of death to handle ("" for any)
-- Output: {examined, skipped, changed, cut-off sequence, cut-off score}
--   (the cut-offs empty when nothing was dead)
--@include keys
--@include now_ms
--@include revive

local op = ARGV[2]
local cs, cscore = ARGV[5], ARGV[6]
if cs == '' then
  local last = redis.call('ZRANGE', K_DEAD, -1, -1, 'WITHSCORES')
  if not last[1] then return {0, 0, 0, '', ''} end
  cs = redis.call('HGET', K_SEQ, 'n') or '0'
  cscore = last[2]
end
local cut = string.format('%016.0f', tonumber(cs))
local mems = redis.call('ZRANGEBYSCORE', K_DEAD, '-inf', cscore, 'LIMIT', ARGV[4], ARGV[3])
-- Every item hash is read before the first write (see the key layout).
local why = ARGV[7]
local whys = {}
for i, mem in ipairs(mems) do
  if why ~= '' then
    whys[i] = redis.call('HGET', ARGV[1] .. string.sub(mem, 18), 'why') or ''
  else
    redis.call('EXISTS', ARGV[1] .. string.sub(mem, 18))
  end
end
local now = now_ms()
local skipped, changed = 0, 0
for i, mem in ipairs(mems) do
  if string.sub(mem, 1, 16) > cut or (why ~= '' and whys[i] ~= why) then
    skipped = skipped + 1
  else
    local id = string.sub(mem, 18)
    local h = ARGV[1] .. id
    if op == 'requeue' then
      revive(h, id, mem, now)
    else
      redis.call('ZREM', K_DEAD, mem)
      redis.call('DEL', h)
    end
    changed = changed + 1
  end
end
if op == 'deldead' then redis.call('HINCRBY', K_STATS, 'deleted', changed) end
return {#mems, skipped, changed, cs, cscore}
