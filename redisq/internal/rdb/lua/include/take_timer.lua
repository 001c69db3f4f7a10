-- take_timer(now, nxt) takes the queue's timer for the claim's caller, due
-- in nxt ms (> 0), and returns 1, or 0 when it leaves it to another. One
-- Queue at a time owns the timer (value "ID|deadline ms", ID the caller's
-- ARGV[8]) and acts at the deadline; the others' waiters wait on the
-- marker. It takes it unless another Queue acts no later than it would.
--@include keys

local function take_timer(now, nxt)
  local at = now + nxt
  local old = redis.call('SET', K_TIMER, ARGV[8] .. '|' .. string.format('%d', at), 'PX', string.format('%d', nxt), 'GET')
  if old then
    local bar = string.find(old, '|', 1, true)
    local odl = bar and tonumber(string.sub(old, bar + 1))
    if odl and string.sub(old, 1, bar - 1) ~= ARGV[8] and odl > now and odl <= at then
      redis.call('SET', K_TIMER, old, 'PX', string.format('%d', odl - now))
      return 0
    end
  end
  return 1
end
