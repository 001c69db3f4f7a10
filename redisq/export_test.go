package redisq

import (
	"context"
	"net"
	"os"
	"os/exec"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// StartTestServer starts a throwaway redis-server on a free loopback port
// for the Example functions (which have no testing.T) and returns its
// address and a function that kills it and removes its directory.
func StartTestServer() (addr string, stop func()) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	dir, err := os.MkdirTemp("", "redisq-example")
	if err != nil {
		panic(err)
	}
	cmd := exec.Command("redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--dir", dir, "--save", "", "--appendonly", "no", "--logfile", "redis.log")
	if err := cmd.Start(); err != nil {
		panic(err)
	}
	stop = func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = os.RemoveAll(dir)
	}
	addr = "127.0.0.1:" + strconv.Itoa(port)
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	for deadline := time.Now().Add(15 * time.Second); c.Ping(context.Background()).Err() != nil; {
		if time.Now().After(deadline) {
			stop()
			panic("redis-server did not start")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return addr, stop
}
