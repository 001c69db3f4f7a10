-- rate_tail(tails, key) reads key's limit and tail (see rate_read) once
-- per script (tails: key -> {l, W, tail} or false); its first call for a
-- key comes before the script's first write.
--@include keys
--@include limit_key

local function rate_tail(tails, key)
  local t = tails[key]
  if t == nil then
    t = false
    local n, per = string.match(redis.call('HGET', K_LIMITS, key) or '', '^(%d+),(%d+)$')
    if n then
      local W = limit_key('rw', key)
      t = {l = {n = tonumber(n), per = tonumber(per)}, W = W, tail = tonumber(redis.call('ZRANGE', W, -1, -1, 'WITHSCORES')[2])}
    end
    tails[key] = t
  end
  return t
end
