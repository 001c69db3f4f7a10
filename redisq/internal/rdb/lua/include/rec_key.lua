-- rec_key(name) is the hash of registration name, {dq:NAME}:rec:NAME.
--@include keys

local function rec_key(name) return K_PREFIX .. 'rec:' .. name end
