-- list: one page of a state's items. It returns at most limit items, and
-- with payloads it stops after the item that brings them to ListBytes.
-- With a reason or a kind it examines up to MaxFilterScan members from the
-- offset and returns those whose reason and kind are exactly those. The
-- item hashes are found while running; read only.
--
-- KEYS[1] -> the state's zset: {dq:NAME}:sched, {dq:NAME}:lease,
--   {dq:NAME}:dead or {dq:NAME}:done
-- ARGV[1] -> {dq:NAME}:m:, the item hash prefix
-- ARGV[2] -> the state code (s/l/d/c)
-- ARGV[3] -> the offset
-- ARGV[4] -> the limit
-- ARGV[5] -> "1" for payloads
-- ARGV[6] -> "1" for reverse order
-- ARGV[7] -> a dead reason to filter by ("" for none)
-- ARGV[8] -> a kind to filter by ("" for any)
-- Output: {now, total, examined, {the index of each item among the
--   examined members}, item...} (see append_item); examined is how many
--   members the page went through
--@include append_item
--@include now_ms
--@include zset_of

local z = zset_of(ARGV[2])
local off = tonumber(ARGV[3])
local lim = tonumber(ARGV[4])
local why, kind = ARGV[7], ARGV[8]
local span = lim
if why ~= '' or kind ~= '' then span = {{MAX_FILTER_SCAN}} end
local now = now_ms()
local card = redis.call('ZCARD', z)
-- Completed items whose time has passed (their hashes expired) are the
-- first members of done: the list starts after them.
local gone = 0
if ARGV[2] == 'c' then
  gone = redis.call('ZCOUNT', z, '-inf', string.format('%d', now))
  card = card - gone
end
local mems = {}
-- An offset past the end reads nothing; below it, off + span - 1 is small
-- and exact (an offset near 2^63 would reach Redis as "9.2e+18").
if off < card then
  local last = math.min(off + span - 1, card - 1)
  if ARGV[6] == '1' then
    mems = redis.call('ZRANGE', z, string.format('%d', off), string.format('%d', last), 'REV', 'WITHSCORES')
  else
    mems = redis.call('ZRANGE', z, string.format('%d', gone + off), string.format('%d', gone + last), 'WITHSCORES')
  end
end
local pos = {}
local out = {now, card, 0, pos}
local bytes, n, examined = 0, 0, 0
for i = 1, #mems, 2 do
  if n >= lim then break end
  examined = examined + 1
  local id = string.sub(mems[i], 18)
  local keep = true
  if why ~= '' or kind ~= '' then
    local f = redis.call('HMGET', ARGV[1] .. id, 'why', 'k')
    keep = (why == '' or f[1] == why) and (kind == '' or f[2] == kind)
  end
  if keep then
    local at, rat = append_item(out, id, mems[i + 1], ARGV[5] == '1')
    n = n + 1
    pos[n] = examined - 1
    if ARGV[5] == '1' then
      bytes = bytes + out[at] + out[rat] -- the payload's and the result's sizes
      if bytes >= {{LIST_BYTES}} then break end
    end
  end
end
out[3] = examined
return out
