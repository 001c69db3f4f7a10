package rdb

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Node is a node that holds a queue's keys (Runner.Holders).
type Node struct {
	c       redis.Cmdable
	Addr    string // "" for the client itself (not a Cluster)
	Replica bool
	own     *redis.Client // c when made for the caller, closed by Close
}

// Close closes a connection Holders made for this node, if any.
func (n Node) Close() {
	if n.own != nil {
		_ = n.own.Close()
	}
}

// MaxmemoryPolicy reads node n's maxmemory-policy (CONFIG GET); reported
// is false when the server does not report it.
func MaxmemoryPolicy(ctx context.Context, n Node) (policy string, reported bool, err error) {
	res, err := n.c.ConfigGet(ctx, "maxmemory-policy").Result()
	if err != nil {
		return "", false, err
	}
	policy, reported = res["maxmemory-policy"]
	return policy, reported, nil
}

// IsReply reports whether err is a reply of the server (an error it
// answered with), not a failure to reach it.
func IsReply(err error) bool { return errors.As(err, new(redis.Error)) }

// Holders returns the nodes that hold the queue's keys: the client itself,
// or on a Cluster the master of the queue's slot and its replicas (one of
// which becomes the master after a failover), found with CLUSTER SHARDS
// (see slotNodes); a replica the client does not know yet gets a
// connection of its own, which Node.Close closes.
func (r *Runner) Holders(ctx context.Context) ([]Node, error) {
	cc, ok := r.Client.(*redis.ClusterClient)
	if !ok {
		return []Node{{c: r.Client}}, nil
	}
	master, replicas, err := r.slotNodes(ctx, cc)
	if err != nil {
		return nil, err
	}
	want := map[string]bool{master: false}
	for _, r := range replicas {
		want[r] = true
	}
	var mu sync.Mutex
	var hs []Node
	err = cc.ForEachShard(ctx, func(ctx context.Context, c *redis.Client) error {
		addr := c.Options().Addr
		mu.Lock()
		defer mu.Unlock()
		if replica, ok := want[addr]; ok {
			hs = append(hs, Node{c: c, Addr: addr, Replica: replica})
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
		hs = append(hs, Node{c: c, Addr: addr, Replica: true, own: c})
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
func (r *Runner) slotNodes(ctx context.Context, cc *redis.ClusterClient) (string, []string, error) {
	slot := KeySlot(r.Keys.Sched)
	shards, err := cc.ClusterShards(ctx).Result()
	if err == nil {
		return shardNodes(shards, slot, cc.Options().TLSConfig != nil, r.Keys.Name)
	}
	if !errors.As(err, new(redis.Error)) {
		return "", nil, err
	}
	// A server before 7.0, or an ACL user refused CLUSTER SHARDS.
	slots, err := cc.ClusterSlots(ctx).Result()
	if err != nil {
		return "", nil, err
	}
	for _, s := range slots {
		if s.Start <= slot && slot <= s.End && len(s.Nodes) > 0 {
			var reps []string
			for _, n := range s.Nodes[1:] {
				reps = append(reps, n.Addr)
			}
			return s.Nodes[0].Addr, reps, nil
		}
	}
	return "", nil, fmt.Errorf("redisq: no node serves slot %d of queue %q", slot, r.Keys.Name)
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
