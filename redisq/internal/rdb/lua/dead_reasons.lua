-- dead reasons: the reasons of death among a page of dead items, oldest
-- death first. The item hashes are found while running; read only.
--
-- KEYS[1] -> {dq:NAME}:dead
-- ARGV[1] -> {dq:NAME}:m:, the item hash prefix
-- ARGV[2] -> the offset
-- ARGV[3] -> the count (at most MaxFilterScan)
-- Output: {now, total dead, examined, then per reason found among the
--   count dead items from offset: reason, count, first death ms, last
--   death ms}
--@include keys
--@include now_ms

local off, n = tonumber(ARGV[2]), tonumber(ARGV[3])
local card = redis.call('ZCARD', K_DEAD)
local mems = {}
if off < card then
  mems = redis.call('ZRANGE', K_DEAD, string.format('%d', off), string.format('%d', off + n - 1), 'WITHSCORES')
end
local order, by = {}, {}
for i = 1, #mems, 2 do
  local why = redis.call('HGET', ARGV[1] .. string.sub(mems[i], 18), 'why') or ''
  local at = tonumber(mems[i + 1])
  local r = by[why]
  if not r then
    r = {0, at, at}
    by[why] = r
    order[#order + 1] = why
  end
  r[1] = r[1] + 1
  if at < r[2] then r[2] = at end
  if at > r[3] then r[3] = at end
end
local out = {now_ms(), card, #mems / 2}
for _, why in ipairs(order) do
  local r = by[why]
  out[#out + 1] = why
  out[#out + 1] = r[1]
  out[#out + 1] = r[2]
  out[#out + 1] = r[3]
end
return out
