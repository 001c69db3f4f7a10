-- Job fields (Job in job.go): k the kind, j what only Go reads, ma max
-- attempts, bb and bx the backoff base and max (µs), ret the retention
-- (ms), lk the limit key (see rate_read and conc_keys); {{JOB_FIELDS}}
-- names them, from JobFields. A script takes a
-- job as ARGV[b], the number of fields set, and then each one's name and
-- value (so ARGV[b + 2n + 1] follows a job of n fields): job_fields(b, t)
-- appends them to t as HSET arguments and returns t.

local function job_fields(b, t)
  for i = b + 1, b + 2 * tonumber(ARGV[b]) do t[#t + 1] = ARGV[i] end
  return t
end
