-- Concurrency limits (SetConcurrencyLimit in limit.go; the claim's side is
-- conc_read, conc_one and conc_write). K_CONC maps a limit key to K: at
-- most K of the key's items hold a place at once (K "0": the limit is
-- being removed, and its waiting items are let go). Per limited key, found
-- while running:
--
--   {dq:NAME}:cf:KEY  zset  the key's leased items that hold a place:
--                           member -> lease deadline (ms), so that an
--                           expired lease frees its place even before it
--                           is reclaimed; the item has the field cf
--   {dq:NAME}:cq:KEY  zset  the items waiting for a place: member -> its
--                           turn (claim ms * 1000 + its rank in the
--                           claim); each is scheduled at MAXDUE, never due
--                           on its own, and has the field cq = 1
--   {dq:NAME}:cp:KEY  zset  the items given a place and made due, not yet
--                           leased: member -> its turn; cq = 2
--
-- The places taken are the live members of cf and the members of cp.
-- When a place frees (an ack, nack, dead letter, release, an expired
-- lease reclaimed, a waiting item leaving, a higher limit), conc_promote
-- moves the first waiting items to cp, due now, one per free place, and
-- they are claimed like any due item: no process polls for a place.
--
-- conc_keys(key) are the key's zsets: F, Q and P.
--@include limit_key

local function conc_keys(key)
  return {F = limit_key('cf', key), Q = limit_key('cq', key), P = limit_key('cp', key)}
end
