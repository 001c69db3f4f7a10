-- rate_one(l, mem, waiting, nowus) decides, for a due item (member mem;
-- waiting: it has wt) of a key whose limit is l (see rate_read), at nowus:
-- nil when it is claimed, else the slot (ms) it waits for. Reads only.
--@include rate_due
--@include rate_room

local function rate_one(l, mem, waiting, nowus)
  -- The tail's item is due when its slot's ms has begun.
  local ahead = l.tail and rate_due(l, l.tail) * 1000 > nowus
  if l.cnt < l.n and (waiting or not ahead) then
    l.cnt = l.cnt + 1
    l.adm[#l.adm + 1] = mem
    if waiting then l.gone[#l.gone + 1] = mem end
    return nil
  end
  local gap = math.ceil(l.per / l.n)
  local s = nowus + 1
  if l.cnt >= l.n then s = rate_room(l, nowus) end
  -- A new item goes behind the tail; a waiting one keeps its place,
  -- after the last one that waits again.
  local prev = l.tail
  if waiting then prev = l.again end
  if prev and prev + gap > s then s = prev + gap end
  if waiting then l.again, l.set = s, true end
  if not l.tail or s > l.tail then l.tail = s end
  l.wake[#l.wake + 1] = string.format('%d', s)
  l.wake[#l.wake + 1] = mem
  return rate_due(l, s)
end
