package rdb

import (
	"context"
	"fmt"
	"time"
)

var scriptTime = newScript("time", kSeq)

// Time reads Redis TIME on the master of the queue's slot: the clock its
// scripts use for due times and leases. A Cluster client sends a plain
// TIME to any node, whose clock may differ.
func (r *Runner) Time(ctx context.Context) (time.Time, error) {
	res, err := r.run(ctx, scriptTime, nil)
	if err != nil {
		return time.Time{}, err
	}
	if len(res) != 2 {
		return time.Time{}, fmt.Errorf("redisq: malformed TIME reply of %d values", len(res))
	}
	return time.Unix(toInt(res[0]), toInt(res[1])*1000), nil
}
