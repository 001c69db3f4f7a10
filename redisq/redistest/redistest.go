// Package redistest starts throwaway redis-server processes for tests and
// examples: each on a free loopback port, in a temporary directory, without
// persistence. redis-server must be on PATH.
package redistest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Server is a running redis-server child process.
type Server struct {
	Addr string // host:port on 127.0.0.1
	dir  string
	cmd  *exec.Cmd
}

// Start starts a redis-server with extra args appended to its command line
// (later ones win) and waits until it answers PING (up to 15s). The caller
// must Close it.
func Start(args ...string) (*Server, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	dir, err := os.MkdirTemp("", "redistest")
	if err != nil {
		return nil, err
	}
	s := &Server{Addr: "127.0.0.1:" + strconv.Itoa(port), dir: dir}
	s.cmd = exec.Command("redis-server", append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--dir", dir, "--save", "", "--appendonly", "no", "--daemonize", "no",
		"--logfile", filepath.Join(dir, "redis.log")}, args...)...)
	if err := s.cmd.Start(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("redistest: starting redis-server: %w", err)
	}
	c := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1})
	defer c.Close()
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		err := c.Ping(context.Background()).Err()
		if err == nil {
			return s, nil
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "redis.log"))
			s.Close()
			return nil, fmt.Errorf("redistest: redis-server did not start: %v\n%s", err, log)
		}
	}
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
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	_ = os.RemoveAll(s.dir)
}

// StartCluster starts a Redis Cluster of n masters (n >= 3, no replicas)
// with redis-cli --cluster create, waits until every node reports
// cluster_state:ok, and returns the servers (the caller must Close each).
// It needs redis-cli on PATH.
func StartCluster(n int) ([]*Server, error) {
	var srvs []*Server
	fail := func(err error) ([]*Server, error) {
		for _, s := range srvs {
			s.Close()
		}
		return nil, err
	}
	var addrs []string
	for range n {
		s, err := Start("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf")
		if err != nil {
			return fail(err)
		}
		srvs = append(srvs, s)
		addrs = append(addrs, s.Addr)
	}
	args := append(append([]string{"--cluster", "create"}, addrs...), "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.Command("redis-cli", args...).CombinedOutput(); err != nil {
		return fail(fmt.Errorf("redistest: redis-cli --cluster create: %v\n%s", err, out))
	}
	for deadline := time.Now().Add(20 * time.Second); !clusterOK(addrs); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			return fail(fmt.Errorf("redistest: cluster of %v not ok after 20s", addrs))
		}
	}
	return srvs, nil
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
