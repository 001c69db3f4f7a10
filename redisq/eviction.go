package redisq

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/dq-go/delayqueue/redisq/internal/rdb"
)

// checkEviction is New's maxmemory-policy check (WithEvictionCheck). It reads
// the policy of every node that holds the queue: the server, or on a Cluster
// the master of the queue's slot and its replicas (one of which becomes the
// master after a failover), found with CLUSTER SHARDS (see rdb.Runner.Holders); a
// replica the client does not know yet is asked through a connection of
// its own, closed after the check. A node whose CONFIG GET is refused
// (managed Redis) or a replica that cannot be reached is skipped with a log
// note; a master that cannot be reached fails New.
func (q *Queue) checkEviction(ctx context.Context) error {
	if q.opt.eviction == EvictionIgnore {
		return nil
	}
	nodes, err := q.db.Holders(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("redisq: checking maxmemory-policy: %w", err)
	}
	defer func() {
		for _, n := range nodes {
			n.Close()
		}
	}()
	var mu sync.Mutex
	var first error
	var wg sync.WaitGroup
	for _, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := q.checkNodeEviction(ctx, n)
			mu.Lock()
			defer mu.Unlock()
			if err != nil && (first == nil || errors.Is(err, ErrEvictionPolicy)) {
				first = err
			}
		}()
	}
	wg.Wait()
	return first
}

func (q *Queue) checkNodeEviction(ctx context.Context, n rdb.Node) error {
	where := []any{"queue", q.name}
	if n.Addr != "" {
		role := "master"
		if n.Replica {
			role = "replica"
		}
		where = append(where, "node", n.Addr, "role", role)
	}
	pol, reported, err := rdb.MaxmemoryPolicy(ctx, n)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		// Only a reply from the server (CONFIG renamed, disabled or not
		// permitted, as on managed Redis) means "unavailable"; a connection
		// failure of the master is New's failure, not a reason to skip the
		// check.
		if !rdb.IsReply(err) && !n.Replica {
			return fmt.Errorf("redisq: checking maxmemory-policy: %w", err)
		}
		q.opt.logger.Info("redisq: skipping maxmemory-policy check: CONFIG GET unavailable", append(where, "err", err)...)
		return nil
	}
	if !reported {
		q.opt.logger.Info("redisq: skipping maxmemory-policy check: not reported", where...)
		return nil
	}
	if pol == "noeviction" {
		return nil
	}
	if q.opt.eviction == EvictionWarn {
		q.opt.logger.Warn("redisq: maxmemory-policy is not noeviction; queue items may be evicted", append(where, "policy", pol)...)
		return nil
	}
	at := ""
	if n.Addr != "" {
		at = fmt.Sprintf(" on %s", n.Addr)
		if n.Replica {
			at += " (a replica of the queue's master)"
		}
	}
	return fmt.Errorf("%w (it is %q%s); set it to noeviction or use WithEvictionCheck", ErrEvictionPolicy, pol, at)
}
