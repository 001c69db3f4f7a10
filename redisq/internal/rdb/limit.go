package rdb

import (
	"context"
	"fmt"
)

var (
	scriptRateLimit  = newScript("rate_limit", kSched, kWake, kSeq).acked()
	scriptLimitState = newScript("limit_state")
	scriptConcLimit  = newScript("conc_limit", kSched, kWake, kSeq).acked()
	scriptConcState  = newScript("conc_state")
)

// Rate limits: the keys of a limit key (see lua/include/rate_read.lua).
func (k *Keys) rateKeys(key string) []string {
	return []string{k.Prefix + "rl:" + key, k.Prefix + "rw:" + key, k.Prefix + "rx:" + key, k.Prefix + "rr:" + key}
}

// SetRateLimit sets key's limit to n claims per per µs, or removes it
// when n is 0, and lets the items waiting under the old limit come due
// now (lua/rate_limit.lua), a batch per call until none is left. The
// calls end: no claim adds to the items to let go, so each call takes a
// batch of them, but for those that a concurrent change adds, which
// that change lets go itself.
func (r *Runner) SetRateLimit(ctx context.Context, key string, n, per int64) error {
	keys := append([]string{r.Keys.Limits}, r.Keys.rateKeys(key)...)
	res, err := r.run(ctx, scriptRateLimit, keys, key, n, per, 1)
	if err != nil {
		return err
	}
	// A batch per call of the items left after the first.
	for calls := toInt(res[2])/ScriptBatch + 1; calls > 0 && toInt(res[2]) > 0; calls-- {
		if res, err = r.run(ctx, scriptRateLimit, keys, key, n, per, 0); err != nil {
			return err
		}
	}
	return nil
}

// LimitState is a limit key's rate limit and its use (lua/limit_state.lua).
type LimitState struct {
	Key      string
	N, Per   int64 // N claims per Per µs; N 0: no limit
	Used     int64 // claims in the window that ends now
	Oldest   int64 // the oldest of them (µs); 0: none
	Room     int64 // when the window has room for a claim (µs); 0: no limit
	Waiting  int64 // items waiting for a slot
	LastSlot int64 // the last slot given to one (µs); 0: none
}

// LimitStates reads the state of each of keys; now is Redis TIME in µs.
func (r *Runner) LimitStates(ctx context.Context, keys []string) (now int64, st []LimitState, err error) {
	extra := []string{r.Keys.Limits}
	args := make([]interface{}, len(keys))
	for i, k := range keys {
		extra = append(extra, r.Keys.rateKeys(k)...)
		args[i] = k
	}
	res, err := r.run(ctx, scriptLimitState, extra, args...)
	if err != nil {
		return 0, nil, err
	}
	now = toInt(res[0])
	for i, k := range keys {
		v := res[1+7*i : 8+7*i]
		st = append(st, LimitState{Key: k, N: toInt(v[0]), Per: toInt(v[1]), Used: toInt(v[2]),
			Oldest: ToMS(v[3]), Room: ToMS(v[4]), Waiting: toInt(v[5]), LastSlot: ToMS(v[6])})
	}
	return now, st, nil
}

// LimitKeys returns one page of the keys that have a limit: HSCAN of the
// limits from cursor; next 0 ends.
func (r *Runner) LimitKeys(ctx context.Context, cursor uint64, count int64) (keys []string, next uint64, err error) {
	kv, next, err := r.Client.HScan(ctx, r.Keys.Limits, cursor, "", count).Result()
	for i := 0; i+1 < len(kv); i += 2 {
		keys = append(keys, kv[i])
	}
	return keys, next, r.permissionError(err)
}

// Concurrency limits: the keys of a limit key (see
// lua/include/conc_keys.lua).
func (k *Keys) concKeys(key string) []string {
	return []string{k.Prefix + "cf:" + key, k.Prefix + "cq:" + key, k.Prefix + "cp:" + key}
}

// SetConcurrencyLimit sets key's concurrency limit to k items leased at
// once, or removes it when k is 0 (lua/conc_limit.lua). Removing it lets
// the waiting items go, a batch per call until none waits: no claim adds
// one to a key whose limit is being removed, so the calls end.
func (r *Runner) SetConcurrencyLimit(ctx context.Context, key string, k int64) error {
	keys := append([]string{r.Keys.Conc}, r.Keys.concKeys(key)...)
	res, err := r.run(ctx, scriptConcLimit, keys, key, k)
	if err != nil || k > 0 {
		return err
	}
	for calls := toInt(res[1])/ScriptBatch + 2; toInt(res[1]) > 0; calls-- {
		if calls == 0 {
			return fmt.Errorf("redisq: the removal of the concurrency limit of %q did not end (%d items still wait): call it again", key, toInt(res[1]))
		}
		if res, err = r.run(ctx, scriptConcLimit, keys, key, k); err != nil {
			return err
		}
	}
	return nil
}

// ConcState is a limit key's concurrency limit and its use
// (lua/conc_state.lua).
type ConcState struct {
	Key      string
	K        int64 // 0: no limit, or being removed (Removing)
	Removing bool
	Leased   int64 // leased items holding a place
	Granted  int64 // items given a place, due, not yet leased
	Waiting  int64 // items waiting for one
}

// ConcStates reads the state of each of keys.
func (r *Runner) ConcStates(ctx context.Context, keys []string) ([]ConcState, error) {
	extra := []string{r.Keys.Conc}
	args := make([]interface{}, len(keys))
	for i, k := range keys {
		extra = append(extra, r.Keys.concKeys(k)...)
		args[i] = k
	}
	res, err := r.run(ctx, scriptConcState, extra, args...)
	if err != nil {
		return nil, err
	}
	st := make([]ConcState, len(keys))
	for i, k := range keys {
		v := res[1+5*i : 6+5*i]
		st[i] = ConcState{Key: k, K: toInt(v[0]), Removing: toInt(v[0]) == 0 && toInt(v[1]) == 1,
			Leased: toInt(v[2]), Granted: toInt(v[3]), Waiting: toInt(v[4])}
	}
	return st, nil
}

// ConcKeys returns one page of the keys that have a concurrency limit:
// HSCAN of the limits from cursor; next 0 ends.
func (r *Runner) ConcKeys(ctx context.Context, cursor uint64, count int64) (keys []string, next uint64, err error) {
	kv, next, err := r.Client.HScan(ctx, r.Keys.Conc, cursor, "", count).Result()
	for i := 0; i+1 < len(kv); i += 2 {
		keys = append(keys, kv[i])
	}
	return keys, next, r.permissionError(err)
}

// LimitIndexes are the zsets of limit key key that name items (for
// Audit): those waiting for a rate slot (rw, and rx while SetRateLimit lets
// them go), those holding a place of its concurrency limit (cf), those
// waiting for one (cq) and those given one, due, not yet leased (cp).
func (k *Keys) LimitIndexes(key string) (rw, rx, cf, cq, cp string) {
	r, c := k.rateKeys(key), k.concKeys(key)
	return r[1], r[2], c[0], c[1], c[2]
}
