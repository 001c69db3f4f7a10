-- The queue's keys, named from ARGV[1], the item hash prefix "{dq:NAME}:m:"
-- (their layout: Keys in keys.go): every queue script names its keys so,
-- one per line here, so that a script defines only those it uses (see
-- lua.go).
--
-- KEYS declares what a call touches, for Redis Cluster, and nothing more:
-- a key declared but absent while the slot migrates makes Redis answer
-- TRYAGAIN before the script runs, so a key that most calls do not touch
-- is not declared. The keys a script finds only as it runs (the item
-- hashes behind zset members, in claims and bulk calls) cannot be
-- declared: such a script reads every one of them before its first write
-- of the items concerned, so that a key already moved to another node
-- aborts it ("non local key") before it changed anything, and the call is
-- retried like TRYAGAIN. The queue scripts never read KEYS (the three that
-- are not queue scripts, partitions.lua, unblock.lua and stop_feed.lua,
-- do).

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
local K_QLOG = K_PREFIX .. 'ql'
local K_RECS = K_PREFIX .. 'recs'
local K_RECX = K_PREFIX .. 'recx'
