-- window_set(key, window, id) gives key's window (see unique_take) to id
-- for window ms from now.
--@include keys

local function window_set(key, window, id)
  redis.call('SET', K_PREFIX .. 'u:' .. key, id, 'PX', window)
end
