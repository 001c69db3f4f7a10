-- rate_successors(l, m, nowus) moves the waiting items whose room is this
-- claim's m claims at nowus to that room, if they were given an earlier
-- slot (see rate_read). The waiting items take the window's rooms in
-- order, one per claim in it: the items of ranks N-m to N-1 of the index
-- take the rooms of the window's last m claims, this claim's, at nowus +
-- PER. A slot given ahead from the tail assumed each claim at its item's
-- slot: a claim later than that would make its successor find the window
-- full and wait again (a claim for nothing), so the successor's slot
-- follows the claim. It is left if that would put it after the next
-- item's, to keep the order.
--@include keys
--@include rate_due

local function rate_successors(l, m, nowus)
  local ws = redis.call('ZRANGE', l.W, math.max(l.n - m, 0), l.n, 'WITHSCORES')
  local room = nowus + l.per
  local cap = tonumber(ws[2 * (m + 1)])
  for i = 1, math.min(m, #ws / 2) do
    local mem, s = ws[2 * i - 1], tonumber(ws[2 * i])
    if s < room and (not cap or room <= cap) then
      local due = rate_due(l, room)
      redis.call('ZADD', l.W, string.format('%d', room), mem)
      redis.call('ZADD', K_SCHED, 'XX', due, mem)
      redis.call('HSET', ARGV[1] .. string.sub(mem, 18), 'wt', due)
    end
  end
end
