-- list registrations: one page of registrations, without payloads.
-- Bounded by the page size. The registrations' hashes and their items are
-- found while running; read only.
--
-- KEYS[1] -> {dq:NAME}:recs
-- KEYS[2] -> {dq:NAME}:recx
-- ARGV[1] -> {dq:NAME}:m:, the item hash prefix
-- ARGV[2] -> the name after which the page starts ("" for the first)
-- ARGV[3] -> the page size
-- Output: {now, the change feed's last entry id ("0-0" if none), the
--   number of names read, the last of them, registration...} (see
--   reg_out)
--@include keys
--@include now_ms
--@include reg_out

local start = '-'
if ARGV[2] ~= '' then start = '(' .. ARGV[2] end
local names = redis.call('ZRANGE', K_RECS, start, '+', 'BYLEX', 'LIMIT', 0, tonumber(ARGV[3]))
local feed = redis.call('XREVRANGE', K_RECX, '+', '-', 'COUNT', 1)
local out = {(now_ms()), '0-0', #names, names[#names] or ''}
if feed[1] then out[2] = feed[1][1] end
for _, n in ipairs(names) do reg_out(out, n, false) end
return out
