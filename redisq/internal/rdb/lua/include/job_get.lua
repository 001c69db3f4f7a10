-- job_get(b, f) returns the value of field f of the job at ARGV[b] (see
-- job_fields), or nil.

local function job_get(b, f)
  for i = b + 1, b + 2 * tonumber(ARGV[b]), 2 do
    if ARGV[i] == f then return ARGV[i + 1] end
  end
  return nil
end
