-- The queue's keys, named from ARGV[1], the item hash prefix "{dq:NAME}:m:"
-- (see Keys in keys.go): every script names its keys so, and declares in
-- KEYS those it knows before it runs, for Redis Cluster. One per line, so
-- that a script defines only those it uses (see shake).

local K_PREFIX = string.sub(ARGV[1], 1, -3)
local K_SCHED = K_PREFIX .. 'sched'
local K_LEASE = K_PREFIX .. 'lease'
local K_DEAD = K_PREFIX .. 'dead'
local K_WAKE = K_PREFIX .. 'wake'
local K_DONE = K_PREFIX .. 'done'
local K_STATS = K_PREFIX .. 'stats'
local K_SEQ = K_PREFIX .. 'seq'
local K_TIMER = K_PREFIX .. 'timer'
local K_LATE = K_PREFIX .. 'late'
local K_LIMITS = K_PREFIX .. 'limits'
local K_CONC = K_PREFIX .. 'conc'
