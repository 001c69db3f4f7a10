package redisq

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"

	"github.com/dq-go/delayqueue/redisq/internal/rdb"
	"github.com/redis/go-redis/v9"
)

// checkEviction is New's maxmemory-policy check (WithEvictionCheck). It reads
// the policy of every node that holds the queue: the server, or on a Cluster
// the master of the queue's slot and its replicas (one of which becomes the
// master after a failover), found with CLUSTER SHARDS (see slotNodes); a
// replica the client does not know yet is asked through a connection of
// its own, closed after the check. A node whose CONFIG GET is refused
// (managed Redis) or a replica that cannot be reached is skipped with a log
// note; a master that cannot be reached fails New.
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
	defer func() {
		for _, n := range nodes {
			if n.own != nil {
				_ = n.own.Close()
			}
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

// holder is a node that holds the queue's keys.
type holder struct {
	c       redis.Cmdable
	addr    string
	replica bool
	own     *redis.Client // c when made for the check, closed after it
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
	if _, missing := want[master]; missing {
		return nil, fmt.Errorf("redisq: the master %s of the queue's slot is not among the client's nodes", master)
	}
	for addr := range want {
		// A replica the client does not know yet (see slotNodes): asked
		// through a connection of its own.
		c := dialNode(cc, addr)
		hs = append(hs, holder{c: c, addr: addr, replica: true, own: c})
	}
	return hs, nil
}

// dialNode returns a client of the node at addr with cc's connection
// options (credentials, TLS, dialer, timeouts), one connection at most.
func dialNode(cc *redis.ClusterClient, addr string) *redis.Client {
	o := cc.Options()
	opt := &redis.Options{
		Addr:                         addr,
		ClientName:                   o.ClientName,
		Dialer:                       o.Dialer,
		OnConnect:                    o.OnConnect,
		Protocol:                     o.Protocol,
		Username:                     o.Username,
		Password:                     o.Password,
		CredentialsProvider:          o.CredentialsProvider,
		CredentialsProviderContext:   o.CredentialsProviderContext,
		StreamingCredentialsProvider: o.StreamingCredentialsProvider,
		MaxRetries:                   o.MaxRetries,
		DialTimeout:                  o.DialTimeout,
		ReadTimeout:                  o.ReadTimeout,
		WriteTimeout:                 o.WriteTimeout,
		ContextTimeoutEnabled:        o.ContextTimeoutEnabled,
		TLSConfig:                    o.TLSConfig,
		PoolSize:                     1,
	}
	if o.NewClient != nil {
		return o.NewClient(opt)
	}
	return redis.NewClient(opt)
}

// slotNodes returns the addresses of the master and the replicas of the
// queue's slot, from CLUSTER SHARDS (Redis 7.0 and later), or from CLUSTER
// SLOTS where the server refuses it. CLUSTER SLOTS is not enough on Redis
// 7.0: it leaves out a replica that has replicated nothing yet (offset 0:
// a new cluster before its first write), and so does the go-redis client,
// which reads it; CLUSTER SHARDS lists every replica. Nodes the answering
// node sees as failed are left out.
func (q *Queue) slotNodes(ctx context.Context, cc *redis.ClusterClient) (string, []string, error) {
	slot := rdb.KeySlot(q.db.Keys.Sched)
	shards, err := cc.ClusterShards(ctx).Result()
	if err == nil {
		return shardNodes(shards, slot, cc.Options().TLSConfig != nil, q.name)
	}
	if !errors.As(err, new(redis.Error)) {
		return "", nil, err
	}
	// A server before 7.0, or an ACL user refused CLUSTER SHARDS.
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

// shardNodes returns the addresses of the master and the replicas of slot
// from a CLUSTER SHARDS reply (tls: the client connects with TLS, so the
// nodes' TLS ports).
func shardNodes(shards []redis.ClusterShard, slot int, tls bool, name string) (string, []string, error) {
	for _, sh := range shards {
		if !slices.ContainsFunc(sh.Slots, func(r redis.SlotRange) bool { return r.Start <= int64(slot) && int64(slot) <= r.End }) {
			continue
		}
		master := ""
		var reps []string
		for _, n := range sh.Nodes {
			host := n.Endpoint
			if host == "" || host == "?" {
				host = n.IP
			}
			port := n.Port
			if port == 0 || (tls && n.TLSPort != 0) {
				port = n.TLSPort
			}
			addr := net.JoinHostPort(host, strconv.FormatInt(port, 10))
			switch {
			case n.Health == "failed":
			case n.Role == "master":
				master = addr
			default:
				reps = append(reps, addr)
			}
		}
		if master != "" {
			return master, reps, nil
		}
	}
	return "", nil, fmt.Errorf("redisq: no node serves slot %d of queue %q", slot, name)
}
