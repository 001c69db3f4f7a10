-- conc_write(concs, sch, fs, k, skip, park, dl, now) records what the
-- claim did with the first k due members of sch (fs: the fields of each:
-- key, its limit key, wt and cq), under the limits of concs (see
-- conc_read): those leased (not in skip) hold a place until dl, those in
-- park wait, in their order (turn: now * 1000 + rank), one given a place
-- first. A parked item waits for no rate slot any more. It then gives the
-- free places (a rate limit can leave one that conc_one counted) to
-- waiting items.
--@include keys
--@include limit_key
--@include conc_promote

local function conc_write(concs, sch, fs, k, skip, park, dl, now)
  local mp = ARGV[1]
  for i = 1, k do
    local key = fs[i].key
    local c = concs[key]
    if c then
      local mem = sch[2 * i - 1]
      local h = mp .. string.sub(mem, 18)
      if not (skip and skip[i]) then
        redis.call('ZADD', c.F, dl, mem)
        redis.call('HSET', h, 'cf', 1)
      elseif park and park[i] then
        local turn = now * 1000 + i
        if fs[i].cq == '2' then
          turn = tonumber(redis.call('ZSCORE', c.P, mem)) or turn
          redis.call('ZREM', c.P, mem)
        end
        redis.call('ZADD', c.Q, 'NX', string.format('%d', turn), mem)
        redis.call('HSET', h, 'cq', 1)
        if fs[i].wt then
          redis.call('HDEL', h, 'wt')
          redis.call('ZREM', limit_key('rw', key), mem)
          redis.call('ZREM', limit_key('rx', key), mem)
        end
      end
    end
  end
  for _, c in pairs(concs) do
    if c then conc_promote(c, now) end
  end
end
