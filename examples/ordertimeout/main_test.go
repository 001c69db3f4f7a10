package main

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// The -workers mode re-executes os.Executable, which under go test is
	// this test binary: with the worker flag it is a worker process.
	if slices.Contains(os.Args[1:], "-"+workerFlag) {
		main()
		os.Exit(0) // not reached: main exits with the worker's code
	}
	goleak.VerifyTestMain(m)
}

func TestInProcess(t *testing.T) {
	r := run(200, 100*time.Millisecond, 0.6, false)
	if r.placed != 200 || r.placed != r.paid+r.expired {
		t.Fatalf("placed %d, paid %d, expired %d: want 200 placed = paid + expired", r.placed, r.paid, r.expired)
	}
	if r.paid == 0 || r.expired == 0 {
		t.Errorf("paid %d, expired %d: want some of each", r.paid, r.expired)
	}
	if len(r.late) != r.expired {
		t.Errorf("%d lateness samples for %d expired orders", len(r.late), r.expired)
	}
	for i, l := range r.late {
		if l < 0 {
			t.Errorf("expired order #%d cancelled %v before its deadline", i, -l)
		}
	}
}

// TestRedis runs the -redis scenario, with the canceller in this process and
// in two worker processes, against a redis-server of its own. It is skipped
// when redis-server is not on PATH (unlike redisq's own tests, which fail).
func TestRedis(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server not on PATH: skipping the -redis scenario (apt-get install -y redis-server)")
	}
	addr := startRedis(t)
	for _, workers := range []int{0, 2} {
		t.Run("workers="+strconv.Itoa(workers), func(t *testing.T) {
			rep, err := runRedis(context.Background(), redisScenario{
				addr: addr, orders: 200, timeout: 100 * time.Millisecond, paidFrac: 0.6, workers: workers,
			})
			t.Logf("\n%s", rep)
			if err != nil {
				t.Fatal(err)
			}
			if !rep.finished || rep.placed != 200 || rep.placed != rep.paid+rep.expired {
				t.Fatalf("placed %d, paid %d, expired %d: want 200 placed = paid + expired", rep.placed, rep.paid, rep.expired)
			}
			if rep.paid == 0 || rep.expired == 0 {
				t.Errorf("paid %d, expired %d: want some of each", rep.paid, rep.expired)
			}
			if len(rep.perWorker) != workers {
				t.Fatalf("%d per-worker counts for %d workers", len(rep.perWorker), workers)
			}
			if workers > 0 {
				sum := 0
				for _, n := range rep.perWorker {
					sum += n
				}
				if sum != rep.expired {
					t.Errorf("workers cancelled %v, sum %d != expired %d", rep.perWorker, sum, rep.expired)
				}
			}
			// runRedis deleted the queue: the server holds no key.
			c := redis.NewClient(&redis.Options{Addr: addr})
			defer c.Close()
			if n, err := c.DBSize(context.Background()).Result(); err != nil || n != 0 {
				t.Errorf("after the run: %d keys (%v), want 0", n, err)
			}
		})
	}
}

// startRedis starts a redis-server on a free loopback port in a temp dir,
// without persistence, and kills it at the end of the test.
func startRedis(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	dir := t.TempDir()
	cmd := exec.Command("redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--dir", dir, "--save", "", "--appendonly", "no", "--daemonize", "no",
		"--logfile", filepath.Join(dir, "redis.log"))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	addr := "127.0.0.1:" + strconv.Itoa(port)
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	for deadline := time.Now().Add(10 * time.Second); ; {
		err := c.Ping(context.Background()).Err()
		if err == nil {
			return addr
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "redis.log"))
			t.Fatalf("redis-server did not start: %v\n%s", err, log)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
