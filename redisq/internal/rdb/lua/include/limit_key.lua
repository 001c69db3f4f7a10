-- limit_key(kind, key) is the key of kind of limit key key,
-- {dq:NAME}:KIND:KEY: of its rate limit (see rate_read) rl, its log; rw,
-- its waiting items; rx, those waiting under an earlier limit; rr, the
-- last slot of one that waits again; of its concurrency limit (see
-- conc_keys) cf, its leased items holding a place; cq, its waiting items;
-- cp, those given a place. The Go side names them in limit.go (rateKeys,
-- concKeys).
--@include keys

local function limit_key(kind, key) return K_PREFIX .. kind .. ':' .. key end
