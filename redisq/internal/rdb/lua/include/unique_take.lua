-- Uniqueness windows (see Unique and Debounce in job.go): an enqueue with
-- a unique key takes the key's window {dq:NAME}:u:KEY, a string holding
-- the id of the item that took it, expiring window ms later. A unique
-- enqueue (mode 'u') is refused while the window is held; a debounced one
-- (mode 'd') replaces the item holding it if that item still waits
-- (scheduled: window_holder, drop_waiting), and takes the window again
-- from now (window_set).
--
-- unique_take(key, window, id) takes key's window for item id unless it
-- is held: false then. A key "" takes nothing.
--@include keys

local function unique_take(key, window, id)
  if key == '' then return true end
  return redis.call('SET', K_PREFIX .. 'u:' .. key, id, 'NX', 'PX', window) ~= false
end
