-- changed(name) adds an entry for registration name to the change feed
-- of the registrations, K_RECX.
--@include keys

local function changed(name)
  redis.call('XADD', K_RECX, 'MAXLEN', '100', '*', 'n', name)
end
