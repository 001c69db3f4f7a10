-- enc(r) is the reply r, a list of integers, as a stored request reply
-- (see rid_key): "1,2,3".

local function enc(r)
  local t = {}
  for i, v in ipairs(r) do t[i] = string.format('%d', v) end
  return table.concat(t, ',')
end
