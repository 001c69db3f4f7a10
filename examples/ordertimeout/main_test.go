package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/dq-go/delayqueue"
	"github.com/dq-go/delayqueue/dqprom"
	"github.com/dq-go/delayqueue/redisq/redistest"
	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// TestRedisExactlyOnce re-executes this test binary as its worker
	// processes, with workerEnv set.
	if w, ok := os.LookupEnv(workerEnv); ok {
		addr, queue, _ := strings.Cut(w, " ")
		os.Exit(worker(addr, queue))
	}
	goleak.VerifyTestMain(m)
}

func TestInProcess(t *testing.T) {
	r, err := run(200, 100*time.Millisecond, 0.6, false, "")
	if err != nil {
		t.Fatal(err)
	}
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

// TestRedis runs the -redis scenario, with -metrics, against a redis-server
// of its own. It is skipped when redis-server is not on PATH (unlike
// redisq's own tests, which fail).
func TestRedis(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server not on PATH: skipping the -redis scenario (apt-get install -y redis-server)")
	}
	addr := redistest.New(t).Addr
	r, err := runRedis(t.Context(), addr, 200, 100*time.Millisecond, 0.6, false, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Log(r)
	if r.placed != 200 || r.placed != r.paid+r.expired {
		t.Fatalf("placed %d, paid %d, expired %d: want 200 placed = paid + expired", r.placed, r.paid, r.expired)
	}
	if r.paid == 0 || r.expired == 0 {
		t.Errorf("paid %d, expired %d: want some of each", r.paid, r.expired)
	}
	// runRedis deleted the queue: the server holds no key.
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	if n, err := c.DBSize(context.Background()).Result(); err != nil || n != 0 {
		t.Errorf("after the run: %d keys (%v), want 0", n, err)
	}
}

// -metrics serves the queue's metrics over HTTP while the scenario runs.
func TestMetrics(t *testing.T) {
	q := delayqueue.New[int]()
	defer q.Close()
	if _, err := q.OfferAfter(1, time.Hour); err != nil {
		t.Fatal(err)
	}
	url, stop, err := serveMetrics("127.0.0.1:0", dqprom.NewQueueCollector(map[string]dqprom.StatsSource{"orders": q}))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil || !strings.Contains(string(body), `delayqueue_items{queue="orders"} 1`) {
		t.Fatalf("metrics: %v\n%s", err, body)
	}
}
