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
