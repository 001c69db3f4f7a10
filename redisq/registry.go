package redisq

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// ListQueues returns the names of the queues on the server that c talks to,
// sorted: every queue that has its sequence key ({dq:NAME}:seq, created by
// the first Enqueue or Schedule and removed only by Destroy). It SCANs the
// keyspace in pages of 1000 keys (many short commands, no long-running
// one, so it is safe on a live server but takes time proportional to the
// number of keys), on every master of a Cluster or every shard of a Ring.
func ListQueues(ctx context.Context, c redis.UniversalClient) ([]string, error) {
	set := map[string]bool{}
	err := scanKeys(ctx, c, "{dq:*}:seq", func(keys []string) error {
		for _, k := range keys {
			name := strings.TrimSuffix(strings.TrimPrefix(k, "{dq:"), "}:seq")
			// Names never hold braces (New refuses them); a key such as
			// "{dq:a}:m:}:seq" is an item of queue "a", not a queue.
			if name != "" && len(name)+len("{dq:}:seq") == len(k) && !strings.ContainsAny(name, "{}") {
				set[name] = true
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(set))
	for n := range set {
		names = append(names, n)
	}
	slices.Sort(names)
	return names, nil
}

// scanKeys SCANs every node that holds data for keys matching the glob
// match, calling fn (serialized) with each non-empty page.
func scanKeys(ctx context.Context, c redis.UniversalClient, match string, fn func([]string) error) error {
	var mu sync.Mutex
	scan := func(ctx context.Context, node *redis.Client) error {
		var cur uint64
		for {
			ks, next, err := node.Scan(ctx, cur, match, 1000).Result()
			if err != nil {
				return err
			}
			if len(ks) > 0 {
				mu.Lock()
				err = fn(ks)
				mu.Unlock()
				if err != nil {
					return err
				}
			}
			if cur = next; cur == 0 {
				return nil
			}
		}
	}
	switch v := c.(type) {
	case *redis.Client:
		return scan(ctx, v)
	case *redis.ClusterClient:
		return v.ForEachMaster(ctx, scan)
	case *redis.Ring:
		return v.ForEachShard(ctx, scan)
	}
	return fmt.Errorf("redisq: listing keys needs *redis.Client, *redis.ClusterClient or *redis.Ring, got %T", c)
}
