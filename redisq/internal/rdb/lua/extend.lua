-- extend: sets a lease's deadline to TIME + µs. A deadline made earlier
-- than the timer's (see timerState; an Extend shorter than what is left
-- of the lease) is an event nobody acts at: the owner waits for its later
-- deadline and the others wait on the marker. So it rings the marker, and
-- the claim that follows takes the timer for it. A usual extension moves
-- the deadline later and costs one GET more.
--
-- KEYS[1] -> {dq:NAME}:lease
-- KEYS[2] -> {dq:NAME}:timer
-- KEYS[3] -> {dq:NAME}:wake
-- KEYS[4] -> {dq:NAME}:m:ID, the item's hash
-- ARGV[1] -> {dq:NAME}:m:, the item hash prefix
-- ARGV[2] -> the id
-- ARGV[3] -> the lease's token
-- ARGV[4] -> the new lease's length from now (µs)
-- Output: {1, deadline} or {0} lease lost
--@include keys
--@include after
--@include conc_of
--@include lease_read
--@include timer_deadline

local h = ARGV[1] .. ARGV[2]
local lost, now, frac, mem, old, cf = lease_read(h, ARGV[3], 'mem', 'dl', 'cf')
if lost then return {0} end
local dl = after(now, frac, tonumber(ARGV[4]))
-- The place of a concurrency limit is held until the new deadline.
local c = conc_of(h, cf)
redis.call('ZADD', K_LEASE, 'XX', dl, mem)
if c then redis.call('ZADD', c.F, 'XX', dl, mem) end
redis.call('HSET', h, 'dl', dl)
if dl < tonumber(old) and dl < timer_deadline() then redis.call('ZADD', K_WAKE, 0, 'w') end
return {1, dl}
