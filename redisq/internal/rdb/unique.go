package rdb

import "context"

var scriptUnique = newScript("unique")

// UniqueWindow reads unique key's window (lua/unique.lua): the id whose
// enqueue took it and when it ends (ms, Redis clock); ok false when it is
// not held.
func (r *Runner) UniqueWindow(ctx context.Context, key string) (id string, end int64, ok bool, err error) {
	res, err := r.run(ctx, scriptUnique, []string{r.Keys.Unique(key)}, key)
	if err != nil || len(res) < 3 {
		return "", 0, false, err
	}
	id, _ = res[1].(string)
	return id, toInt(res[0]) + toInt(res[2]), true, nil
}

// ReleaseUnique ends unique key's window at once: true when it was held.
func (r *Runner) ReleaseUnique(ctx context.Context, key string) (bool, error) {
	n, err := r.Client.Del(ctx, r.Keys.Unique(key)).Result()
	return n > 0, r.permissionError(err)
}
