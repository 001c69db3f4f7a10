// Package redistest starts throwaway redis-server processes for tests and
// examples: each on a free loopback port, in a temporary directory, without
// persistence. redis-server must be on PATH.
package redistest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Server is a running redis-server child process.
type Server struct {
	Addr string // host:port on 127.0.0.1
	dir  string
	args []string
	cmd  *exec.Cmd
	mu   sync.Mutex
	done bool // guarded by mu: the process was killed
}

// Start starts a redis-server with extra args appended to its command line
// (later ones win) and waits until it answers PING (up to 15s). The caller
// must Close it.
func Start(args ...string) (*Server, error) {
	var err error
	for range 5 { // a port taken between our check and the server's bind
		var s *Server
		if s, err = start(args); err == nil {
			return s, nil
		}
	}
	return nil, err
}

func start(args []string) (*Server, error) {
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "redistest")
	if err != nil {
		return nil, err
	}
	s := &Server{Addr: "127.0.0.1:" + strconv.Itoa(port), dir: dir}
	s.args = append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--dir", dir, "--save", "", "--appendonly", "no", "--daemonize", "no",
		"--logfile", filepath.Join(dir, "redis.log")}, args...)
	if err := s.start(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

// FreePort returns a loopback port that is free now, as is the port 10000
// above it, which a Cluster node binds for its bus.
func FreePort() (int, error) {
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		if port+10000 > 65535 {
			_ = l.Close()
			continue
		}
		bus, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port+10000))
		_ = l.Close()
		if err != nil {
			continue
		}
		_ = bus.Close()
		return port, nil
	}
	return 0, errors.New("redistest: no free port with its cluster bus port free")
}

// start runs the process and waits until it answers PING (up to 15s). The
// caller holds mu, or owns s alone.
func (s *Server) start() error {
	s.cmd = exec.Command("redis-server", s.args...)
	if err := s.cmd.Start(); err != nil {
		return fmt.Errorf("redistest: starting redis-server: %w", err)
	}
	s.done = false
	c := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1})
	defer c.Close()
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		err := c.Ping(context.Background()).Err()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
			_ = s.cmd.Process.Kill()
			_ = s.cmd.Wait()
			s.done = true
			return fmt.Errorf("redistest: redis-server did not start: %v\n%s", err, log)
		}
	}
}

// Restart starts a killed server again, on the same port, with the same
// arguments and directory (a Cluster node keeps its nodes.conf, so it
// rejoins: a master that lost its slots meanwhile comes back as a replica).
func (s *Server) Restart() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.done {
		return fmt.Errorf("redistest: restarting %s, which runs", s.Addr)
	}
	return s.start()
}

// New is Start for a test: it fails tb if the server does not start and
// closes the server when the test ends.
func New(tb testing.TB, args ...string) *Server {
	tb.Helper()
	s, err := Start(args...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Close)
	return s
}

// Close kills the server (SIGKILL) and removes its directory.
func (s *Server) Close() {
	s.Kill()
	_ = os.RemoveAll(s.dir)
}

// Kill sends SIGKILL (after SIGCONT, in case it was stopped) and waits for
// the process to end; its directory stays until Close. Killing a killed
// server does nothing.
func (s *Server) Kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGCONT)
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.done = true
}

// Stop freezes the server (SIGSTOP), as a stalled or partitioned node:
// its connections stay open and nothing is answered. Cont resumes it.
func (s *Server) Stop() { s.signal(syscall.SIGSTOP) }

// Cont resumes a server that Stop froze (SIGCONT).
func (s *Server) Cont() { s.signal(syscall.SIGCONT) }

func (s *Server) signal(sig syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.done {
		_ = s.cmd.Process.Signal(sig)
	}
}

// StartCluster starts a Redis Cluster of n masters (n >= 3, no replicas)
// with redis-cli --cluster create, waits until every node reports
// cluster_state:ok, and returns the servers (the caller must Close each).
// It needs redis-cli on PATH.
func StartCluster(n int) ([]*Server, error) {
	c, err := StartClusterWith(ClusterOptions{Masters: n})
	if err != nil {
		return nil, err
	}
	return c.Servers, nil
}

// ClusterOptions configures StartClusterWith.
type ClusterOptions struct {
	Masters  int // at least 3
	Replicas int // per master
	// NodeTimeout is cluster-node-timeout: how long a node may not answer
	// before the others fail it over (default 15s, Redis' own; a test of
	// failover sets about a second).
	NodeTimeout time.Duration
	Args        []string // more redis-server arguments for every node
	// Fresh returns the cluster as soon as its nodes are ok, its replicas
	// in sync and listed by CLUSTER SHARDS, without waiting until CLUSTER
	// SLOTS lists the replicas: Redis 7.0 lists a replica there only once
	// it has replicated something (the master's first replication PING,
	// 10 s later by default, or a write), and clients that read CLUSTER
	// SLOTS (go-redis) do not know it until then.
	Fresh bool
}

// Cluster is a running Redis Cluster of local redis-servers.
type Cluster struct {
	Servers []*Server // in creation order: the first Masters were made masters
}

// Addrs returns every node's address.
func (c *Cluster) Addrs() []string {
	var a []string
	for _, s := range c.Servers {
		a = append(a, s.Addr)
	}
	return a
}

// Close kills every node and removes their directories.
func (c *Cluster) Close() {
	for _, s := range c.Servers {
		s.Close()
	}
}

// StartClusterWith starts a Redis Cluster (redis-cli --cluster create,
// with --cluster-replicas), waits until every node reports cluster_state:ok
// and every replica is in sync, and returns it; the caller must Close it. It
// needs redis-cli on PATH.
func StartClusterWith(o ClusterOptions) (*Cluster, error) {
	c := &Cluster{}
	fail := func(err error) (*Cluster, error) {
		c.Close()
		return nil, err
	}
	args := []string{"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"}
	if o.NodeTimeout > 0 {
		args = append(args, "--cluster-node-timeout", strconv.FormatInt(o.NodeTimeout.Milliseconds(), 10))
	}
	args = append(args, o.Args...)
	for range o.Masters * (1 + o.Replicas) {
		s, err := Start(args...)
		if err != nil {
			return fail(err)
		}
		c.Servers = append(c.Servers, s)
	}
	addrs := c.Addrs()
	create := append(append([]string{"--cluster", "create"}, addrs...), "--cluster-replicas", strconv.Itoa(o.Replicas), "--cluster-yes")
	if out, err := exec.Command("redis-cli", create...).CombinedOutput(); err != nil {
		return fail(fmt.Errorf("redistest: redis-cli --cluster create: %v\n%s", err, out))
	}
	for deadline := time.Now().Add(30 * time.Second); !clusterOK(addrs) || !replicasInSync(addrs) || !shardsListReplicas(addrs, o.Replicas) || (!o.Fresh && !slotsListReplicas(addrs, o.Replicas)); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			return fail(fmt.Errorf("redistest: cluster of %v not ok after 30s", addrs))
		}
	}
	return c, nil
}

// slotsListReplicas reports whether every node's CLUSTER SLOTS lists n
// replicas for every slot range (gossip spreads them after the create).
func slotsListReplicas(addrs []string, n int) bool {
	for _, a := range addrs {
		c := redis.NewClient(&redis.Options{Addr: a})
		slots, err := c.ClusterSlots(context.Background()).Result()
		_ = c.Close()
		if err != nil || len(slots) == 0 {
			return false
		}
		for _, r := range slots {
			if len(r.Nodes) != 1+n {
				return false
			}
		}
	}
	return true
}

// shardsListReplicas reports whether every node's CLUSTER SHARDS lists n
// replicas for every shard.
func shardsListReplicas(addrs []string, n int) bool {
	for _, a := range addrs {
		c := redis.NewClient(&redis.Options{Addr: a})
		shards, err := c.ClusterShards(context.Background()).Result()
		_ = c.Close()
		if err != nil || len(shards) == 0 {
			return false
		}
		for _, sh := range shards {
			if len(sh.Nodes) != 1+n {
				return false
			}
		}
	}
	return true
}

// replicasInSync reports whether every replica among addrs has its link to
// its master up.
func replicasInSync(addrs []string) bool {
	for _, a := range addrs {
		c := redis.NewClient(&redis.Options{Addr: a})
		info, err := c.Info(context.Background(), "replication").Result()
		_ = c.Close()
		if err != nil || (strings.Contains(info, "role:slave") && !strings.Contains(info, "master_link_status:up")) {
			return false
		}
	}
	return true
}

// MasterOf returns the node that is now master of key's slot, by asking
// the nodes (CLUSTER SHARDS through any node that answers).
func (c *Cluster) MasterOf(ctx context.Context, key string) (*Server, error) {
	nodes, err := c.slotNodes(ctx, key)
	if err != nil {
		return nil, err
	}
	return nodes[0], nil
}

// ReplicasOf returns the nodes that are now replicas of key's slot.
func (c *Cluster) ReplicasOf(ctx context.Context, key string) ([]*Server, error) {
	nodes, err := c.slotNodes(ctx, key)
	if err != nil {
		return nil, err
	}
	return nodes[1:], nil
}

// slotNodes returns the master and the replicas serving key's slot, as a
// node that answers CLUSTER SHARDS sees them (which lists every replica,
// unlike CLUSTER SLOTS; see ClusterOptions.Fresh), leaving out nodes it
// sees failed.
func (c *Cluster) slotNodes(ctx context.Context, key string) ([]*Server, error) {
	byAddr := map[string]*Server{}
	for _, s := range c.Servers {
		byAddr[s.Addr] = s
	}
	var last error
	for _, s := range c.Servers {
		cl := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1, DialTimeout: time.Second})
		slot, err := cl.ClusterKeySlot(ctx, key).Result()
		var shards []redis.ClusterShard
		if err == nil {
			shards, err = cl.ClusterShards(ctx).Result()
		}
		_ = cl.Close()
		if err != nil {
			last = err
			continue
		}
		for _, sh := range shards {
			if !slices.ContainsFunc(sh.Slots, func(r redis.SlotRange) bool { return r.Start <= slot && slot <= r.End }) {
				continue
			}
			var master *Server
			var replicas []*Server
			for _, n := range sh.Nodes {
				srv := byAddr[net.JoinHostPort(n.IP, strconv.FormatInt(n.Port, 10))]
				switch {
				case srv == nil || n.Health == "failed":
				case n.Role == "master":
					master = srv
				default:
					replicas = append(replicas, srv)
				}
			}
			if master != nil {
				return append([]*Server{master}, replicas...), nil
			}
		}
		last = fmt.Errorf("redistest: no node serves the slot of %q", key)
	}
	return nil, last
}

func clusterOK(addrs []string) bool {
	for _, a := range addrs {
		c := redis.NewClient(&redis.Options{Addr: a})
		info, err := c.ClusterInfo(context.Background()).Result()
		_ = c.Close()
		if err != nil || !strings.Contains(info, "cluster_state:ok") {
			return false
		}
	}
	return true
}

// NewCluster is StartCluster for a test: it skips the test when redis-cli
// is missing, fails it if the cluster does not start, closes the servers
// when the test ends, and returns their addresses.
func NewCluster(tb testing.TB, n int) []string {
	tb.Helper()
	if _, err := exec.LookPath("redis-cli"); err != nil {
		tb.Skip("redis-cli needed for a cluster")
	}
	srvs, err := StartCluster(n)
	if err != nil {
		tb.Fatal(err)
	}
	var addrs []string
	for _, s := range srvs {
		tb.Cleanup(s.Close)
		addrs = append(addrs, s.Addr)
	}
	return addrs
}

// NewClusterWith is StartClusterWith for a test: it skips the test when
// redis-cli is missing, fails it if the cluster does not start, and closes
// the cluster when the test ends.
func NewClusterWith(tb testing.TB, o ClusterOptions) *Cluster {
	tb.Helper()
	if _, err := exec.LookPath("redis-cli"); err != nil {
		tb.Skip("redis-cli needed for a cluster")
	}
	c, err := StartClusterWith(o)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(c.Close)
	return c
}
