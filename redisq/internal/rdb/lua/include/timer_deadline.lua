-- timer_deadline() is the deadline the timer's owner acts at (K_TIMER
-- holds "ID|deadline ms"), or MAXDUE when nobody owns it.
--@include keys

local function timer_deadline()
  local v = redis.call('GET', K_TIMER)
  local bar = v and string.find(v, '|', 1, true)
  return bar and tonumber(string.sub(v, bar + 1)) or {{MAXDUE}}
end
