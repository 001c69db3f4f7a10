-- pause: marks the sequence hash (see claim_due) with the time of the
-- pause (ms; an earlier version wrote 1).
--
-- KEYS[1] -> {dq:NAME}:seq
-- ARGV[1] -> {dq:NAME}:m:, the item hash prefix
-- Output: {1} paused, {0} already
--@include keys

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
return {redis.call('HSETNX', K_SEQ, 'paused', string.format('%d', now))}
