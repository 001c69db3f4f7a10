-- rate_behind(tails, key, nowus) is, for a new item of key due now that an
-- enqueue stores at nowus, its slot (µs) and when it is due (ms) when it
-- must wait behind the key's waiting items (their tail is still ahead): it
-- goes into waiting at once, where a claim would have put it, with no
-- claim to find it due first. Else nil. Reads nothing but rate_tail's.
--@include rate_tail
--@include rate_due

local function rate_behind(tails, key, nowus)
  local t = rate_tail(tails, key)
  if not t or not t.tail or rate_due(t.l, t.tail) * 1000 <= nowus then return nil end
  local s = t.tail + math.ceil(t.l.per / t.l.n)
  t.tail = s
  return s, rate_due(t.l, s)
end
