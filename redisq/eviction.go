package redisq

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/redis/go-redis/v9"
)

// checkEviction is New's maxmemory-policy check (WithEvictionCheck). It reads
// the policy of every node that holds the queue: the server, or on a Cluster
// the master of the queue's slot and its replicas (one of which becomes the
// master after a failover). A node whose CONFIG GET is refused (managed
// Redis) or a replica that cannot be reached is skipped with a log note; a
// master that cannot be reached fails New.
func (q *Queue) checkEviction(ctx context.Context) error {
	if q.opt.eviction == EvictionIgnore {
		return nil
	}
	nodes, err := q.holders(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("redisq: checking maxmemory-policy: %w", err)
	}
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

// holder is a node that holds the queue's keys.
type holder struct {
	c       redis.Cmdable
	addr    string
	replica bool
}

func (q *Queue) checkNodeEviction(ctx context.Context, n holder) error {
	where := []any{"queue", q.name}
	if n.addr != "" {
		role := "master"
		if n.replica {
			role = "replica"
		}
		where = append(where, "node", n.addr, "role", role)
	}
	res, err := n.c.ConfigGet(ctx, "maxmemory-policy").Result()
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		// Only a reply from the server (CONFIG renamed, disabled or not
		// permitted, as on managed Redis) means "unavailable"; a connection
		// failure of the master is New's failure, not a reason to skip the
		// check.
		var reply redis.Error
		if !errors.As(err, &reply) && !n.replica {
			return fmt.Errorf("redisq: checking maxmemory-policy: %w", err)
		}
		q.opt.logger.Info("redisq: skipping maxmemory-policy check: CONFIG GET unavailable", append(where, "err", err)...)
		return nil
	}
	pol, ok := res["maxmemory-policy"]
	if !ok {
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
	if n.addr != "" {
		at = fmt.Sprintf(" on %s", n.addr)
		if n.replica {
			at += " (a replica of the queue's master)"
		}
	}
	return fmt.Errorf("%w (it is %q%s); set it to noeviction or use WithEvictionCheck", ErrEvictionPolicy, pol, at)
}

// holders returns the nodes that hold the queue's keys: the client itself,
// or on a Cluster the master of the queue's slot and its replicas.
func (q *Queue) holders(ctx context.Context) ([]holder, error) {
	cc, ok := q.client.(*redis.ClusterClient)
	if !ok {
		return []holder{{c: q.client}}, nil
	}
	master, replicas, err := q.slotNodes(ctx, cc)
	if err != nil {
		return nil, err
	}
	want := map[string]bool{master: false}
	for _, r := range replicas {
		want[r] = true
	}
	var mu sync.Mutex
	var hs []holder
	err = cc.ForEachShard(ctx, func(ctx context.Context, c *redis.Client) error {
		addr := c.Options().Addr
		mu.Lock()
		defer mu.Unlock()
		if replica, ok := want[addr]; ok {
			hs = append(hs, holder{c: c, addr: addr, replica: replica})
			delete(want, addr)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for addr, replica := range want {
		if !replica {
			return nil, fmt.Errorf("redisq: the master %s of the queue's slot is not among the client's nodes", addr)
		}
		q.opt.logger.Info("redisq: skipping maxmemory-policy check of a replica the client does not know",
			"queue", q.name, "node", addr)
	}
	return hs, nil
}

// slotNodes returns the addresses of the master and the replicas of the
// queue's slot, from CLUSTER SLOTS.
func (q *Queue) slotNodes(ctx context.Context, cc *redis.ClusterClient) (string, []string, error) {
	slot := keySlot(q.keys[kSched])
	slots, err := cc.ClusterSlots(ctx).Result()
	if err != nil {
		return "", nil, err
	}
	for _, r := range slots {
		if r.Start <= slot && slot <= r.End && len(r.Nodes) > 0 {
			var reps []string
			for _, n := range r.Nodes[1:] {
				reps = append(reps, n.Addr)
			}
			return r.Nodes[0].Addr, reps, nil
		}
	}
	return "", nil, fmt.Errorf("redisq: no node serves slot %d of queue %q", slot, q.name)
}
