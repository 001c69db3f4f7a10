-- get registration: one registration with its payload. Its item is found
-- while running; read only.
--
-- KEYS[1] -> {dq:NAME}:rec:REG, the registration's hash
-- ARGV[1] -> {dq:NAME}:m:, the item hash prefix
-- ARGV[2] -> the name
-- Output: {now, registration} (see reg_out), or {now} when not found
--@include now_ms
--@include reg_out

local out = {(now_ms())}
reg_out(out, ARGV[2], true)
return out
