-- lease.lua for a call without a request id (extend).

local h = ARGV[1] .. ARGV[2]
local f = redis.call('HMGET', h, 'st', 'tok', 'dl', 'mem', 'cf')
local now, frac = now_ms()
if f[1] ~= 'l' or f[2] ~= ARGV[3] or tonumber(f[3]) <= now then return {0} end
