-- rate_logs_of(h, mem) returns the rate logs that hold the claim of lease
-- member mem of item hash h (its limit key's, the queue's: see rate_read
-- and queue_rate_read): a Snooze takes it out of them again. Reads only;
-- nothing when the queue has no rate limit.
--@include keys
--@include limit_key

local function rate_logs_of(h, mem)
  local q = redis.call('HMGET', K_SEQ, 'lim', 'ql')
  local logs = {}
  if q[1] then logs[1] = limit_key('rl', redis.call('HGET', h, 'lk') or '') end
  if q[2] then logs[#logs + 1] = K_QLOG end
  local out = {}
  for _, L in ipairs(logs) do
    if redis.call('ZSCORE', L, mem) then out[#out + 1] = L end
  end
  return out
end
