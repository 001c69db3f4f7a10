-- Request ids (see runOnce): the idempotent scripts get a request id as
-- their last argument and leave their reply where a rerun of the same call
-- finds it. A reply that keeps the item is stored in the item hash itself
-- (fields rq = request id, rr = reply, enc), in the HSET the script does
-- anyway; one that deletes the item costs one SET of {dq:NAME}:r:RID with
-- a TTL (done_gone). A rerun that finds the item changed by its own first
-- run returns replay().
--
-- rid_key() is the key of this call's reply, {dq:NAME}:r:RID.
--@include keys

local function rid_key()
  return K_PREFIX .. 'r:' .. ARGV[#ARGV]
end
