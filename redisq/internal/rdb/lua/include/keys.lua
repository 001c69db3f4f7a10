-- luaKeys names the queue's keys from ARGV[1] (see above).

local K_PREFIX = string.sub(ARGV[1], 1, -3)
local K_SCHED, K_LEASE, K_DEAD, K_WAKE = K_PREFIX .. 'sched', K_PREFIX .. 'lease', K_PREFIX .. 'dead', K_PREFIX .. 'wake'
local K_STATS, K_SEQ, K_TIMER, K_LATE = K_PREFIX .. 'stats', K_PREFIX .. 'seq', K_PREFIX .. 'timer', K_PREFIX .. 'late'
