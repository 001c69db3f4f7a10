-- dead reasons: ARGV[2] offset, ARGV[3] count (at most MaxFilterScan).
-- Returns {now, total dead, examined, then per reason found among the
-- count dead items from offset, oldest death first: reason, count, first
-- death ms, last death ms}. The item hashes are found while running; it
-- does not write.
--
-- KEYS: dead; the item hashes are found while running (read only)
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
