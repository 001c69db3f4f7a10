-- {{REC_FIELDS}} are a registration's job: the fields JOB_FIELDS, which
-- every occurrence gets, and op, the occurrence policy (see occ_read),
-- which the occurrences that the keepers enqueue get.
--
-- rec_job(R, policy) is the job of registration R as HSET arguments, with
-- its occurrence policy when policy is set (not for an extra run or a
-- backfill, which an operator asked for).

local REC_FIELDS = { {{REC_FIELDS}} }
local function rec_job(R, policy)
  local v = redis.call('HMGET', R, unpack(REC_FIELDS))
  local t = {}
  for i, f in ipairs(REC_FIELDS) do
    if v[i] and (policy or f ~= 'op') then t[#t + 1] = f; t[#t + 1] = v[i] end
  end
  return t
end
