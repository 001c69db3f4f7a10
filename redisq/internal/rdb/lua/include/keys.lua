-- The queue's keys, named from ARGV[1], the item hash prefix "{dq:NAME}:m:"
-- (see Keys in keys.go): every script names its keys so, and declares in
-- KEYS those it knows before it runs, for Redis Cluster.

local K_PREFIX = string.sub(ARGV[1], 1, -3)
local K_SCHED, K_LEASE, K_DEAD, K_WAKE = K_PREFIX .. 'sched', K_PREFIX .. 'lease', K_PREFIX .. 'dead', K_PREFIX .. 'wake'
local K_DONE = K_PREFIX .. 'done'
local K_STATS, K_SEQ, K_TIMER, K_LATE = K_PREFIX .. 'stats', K_PREFIX .. 'seq', K_PREFIX .. 'timer', K_PREFIX .. 'late'
