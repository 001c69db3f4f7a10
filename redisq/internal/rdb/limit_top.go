package rdb

import (
	"context"
	"fmt"
)

var scriptLimitTop = newScript("limit_top", kSeq)

// TopPage is how many keys of a limits hash one page of HSCAN asks for,
// and one limit_top.lua call counts the waiting items of: on the 2-CPU
// VM under load, a page of rate keys (1,000 ZCARD) takes 0.44 ms of
// server time at the median and 0.75 ms at most, its HSCAN 0.14 ms and
// 0.58 ms; a page of 1,000 keys went past 1 ms. TopStates is how many
// keys' states one script reads (0.30 ms, 0.47 ms at most, for rate
// limits).
const (
	TopPage   = 500
	TopStates = 50
)

// LimitKind is one kind of limit: the sequence field that counts its
// keys, and each key's zsets of waiting items.
type LimitKind struct {
	field   string
	waiting func(*Keys, string) []string
}

// The kinds of limits (see lua/include/rate_read.lua and
// lua/include/conc_keys.lua): a rate limit's items wait in rw (for a slot)
// and rx (under an earlier limit), a concurrency limit's in cq.
var (
	RateKind = LimitKind{"lim", func(k *Keys, key string) []string { r := k.rateKeys(key); return r[1:3] }}
	ConcKind = LimitKind{"cc", func(k *Keys, key string) []string { return k.concKeys(key)[1:2] }}
)

// LimitWaiting counts the waiting items of each of keys, limits of kind
// (lua/limit_top.lua: one ZCARD per zset), and returns how many limits
// of the kind are set.
func (r *Runner) LimitWaiting(ctx context.Context, kind LimitKind, keys []string) (set int64, waiting []int64, err error) {
	per := len(kind.waiting(&r.Keys, ""))
	zsets := make([]string, 0, per*len(keys))
	for _, k := range keys {
		zsets = append(zsets, kind.waiting(&r.Keys, k)...)
	}
	res, err := r.run(ctx, scriptLimitTop, zsets, kind.field, per)
	if err != nil {
		return 0, nil, err
	}
	if len(res) != len(keys)+1 {
		return 0, nil, fmt.Errorf("redisq: limit_top: %d values for %d keys", len(res)-1, len(keys))
	}
	waiting = make([]int64, len(keys))
	for i := range keys {
		waiting[i] = toInt(res[1+i])
	}
	return toInt(res[0]), waiting, nil
}
