-- list: ARGV[2] state code (s/l/d), ARGV[3] offset, ARGV[4] limit, ARGV[5]
-- "1" for payloads, ARGV[6] "1" for reverse order, ARGV[7] a dead reason
-- to filter by ("" for none). Returns {now, total, examined, {the index
-- of each item among the examined members}, item...}: at
-- most limit items, and with payloads it stops after the item that brings
-- them to ListBytes. With a reason it examines up to MaxFilterScan members
-- from the offset and returns those whose reason is exactly it; examined
-- is how many members the page went through.
--
-- KEYS: the state's zset; the item hashes are found while running (read
--   only)
--@include common
--@include item

local z = zset_of(ARGV[2])
local off = tonumber(ARGV[3])
local lim = tonumber(ARGV[4])
local why = ARGV[7]
local span = lim
if why ~= '' then span = {{MAX_FILTER_SCAN}} end
local card = redis.call('ZCARD', z)
local mems = {}
-- An offset past the end reads nothing; below it, off + span - 1 is small
-- and exact (an offset near 2^63 would reach Redis as "9.2e+18").
if off < card then
  local a, b = string.format('%d', off), string.format('%d', off + span - 1)
  if ARGV[6] == '1' then
    mems = redis.call('ZRANGE', z, a, b, 'REV', 'WITHSCORES')
  else
    mems = redis.call('ZRANGE', z, a, b, 'WITHSCORES')
  end
end
local pos = {}
local out = {now_ms(), card, 0, pos}
local bytes, n, examined = 0, 0, 0
for i = 1, #mems, 2 do
  if n >= lim then break end
  examined = examined + 1
  local id = string.sub(mems[i], 18)
  if why == '' or redis.call('HGET', ARGV[1] .. id, 'why') == why then
    append_item(out, id, mems[i + 1], ARGV[5] == '1')
    n = n + 1
    pos[n] = examined - 1
    if ARGV[5] == '1' then
      bytes = bytes + out[#out - 1]
      if bytes >= {{LIST_BYTES}} then break end
    end
  end
end
out[3] = examined
return out
