-- get registration: ARGV[2] name. Returns
-- {now, registration} with the payload, or {now} when not found.
--
-- KEYS: the registration's hash (its item is found while running; read only)
--@include now_ms
--@include reg_out

local out = {(now_ms())}
reg_out(out, ARGV[2], true)
return out
