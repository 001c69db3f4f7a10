-- fmt(x) is the integer x as Redis gets it exactly: "%d", never "1e+17".

local function fmt(x) return string.format('%d', x) end
