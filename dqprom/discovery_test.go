package dqprom_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dq-go/delayqueue/dqprom"
	"github.com/dq-go/delayqueue/redisq"
	"github.com/dq-go/delayqueue/redisq/redistest"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"
)

// counter is a go-redis hook that counts the commands a client sends, by
// name, pipelined ones included, but not those that set up a new
// connection (HELLO, CLIENT), and can hold the first Stats script.
type counter struct {
	mu   sync.Mutex
	n    map[string]int
	hold chan struct{} // if set, the first EVALSHA/EVAL waits for it to close
	held bool
}

func newCounter() *counter { return &counter{n: map[string]int{}} }

func (h *counter) count(cmds ...redis.Cmder) {
	h.mu.Lock()
	var wait chan struct{}
	for _, c := range cmds {
		name := strings.ToLower(c.Name())
		if name == "hello" || name == "client" {
			continue
		}
		h.n[name]++
		if (name == "evalsha" || name == "eval") && h.hold != nil && !h.held {
			h.held, wait = true, h.hold
		}
	}
	h.mu.Unlock()
	if wait != nil {
		<-wait
	}
}

// take returns the counts since the last take and resets them.
func (h *counter) take() (map[string]int, int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	m, total := h.n, 0
	for _, v := range m {
		total += v
	}
	h.n = map[string]int{}
	return m, total
}

func (h *counter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *counter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.count(cmd)
		return next(ctx, cmd)
	}
}
func (h *counter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.count(cmds...)
		return next(ctx, cmds)
	}
}

// countedClient returns a client of addr whose commands h counts.
func countedClient(t *testing.T, addr string, h *counter) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr})
	c.AddHook(h)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// seedQueues creates n registered queues q0..q(n-1), one item each.
func seedQueues(t *testing.T, c redis.UniversalClient, n int) {
	t.Helper()
	for i := range n {
		q := newQueue(t, c, fmt.Sprint("q", i))
		if _, err := q.EnqueueAfter(context.Background(), "x", nil, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
}

// Item 6 of issue 17: the server-wide collector SCANned the whole keyspace
// at every scrape (seconds at 3M keys). A scrape's commands must not grow
// with the keyspace: 300,000 unrelated keys add at most the SCAN budget
// (10 SCANs of 1000 keys), and the scrape still reads every queue.
func TestServerScrapeCostIndependentOfKeyspace(t *testing.T) {
	s := redistest.New(t, "--enable-debug-command", "yes")
	admin := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer admin.Close()
	seedQueues(t, admin, 10)
	h := newCounter()
	col := dqprom.NewRedisServerCollector(countedClient(t, s.Addr, h))
	if n := testutil.CollectAndCount(col, "redisq_up"); n != 10 {
		t.Fatalf("%d queues, want 10", n) // the first scrape opens them
	}
	h.take()
	testutil.CollectAndCount(col)
	small, smallTotal := h.take()
	t.Logf("one scrape, 10 queues, %d keys: %d commands %v", admin.DBSize(context.Background()).Val(), smallTotal, small)

	if err := admin.Do(context.Background(), "DEBUG", "POPULATE", 300000, "unrelated").Err(); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if n := testutil.CollectAndCount(col, "redisq_up"); n != 10 {
			t.Fatalf("%d queues, want 10", n)
		}
		big, bigTotal := h.take()
		t.Logf("scrape %d with 300,000 more keys: %d commands %v", i, bigTotal, big)
		budget := dqprom.DefaultScanKeys / 1000
		if big["scan"] > budget || bigTotal > smallTotal+budget {
			t.Fatalf("a scrape sent %d commands (%d SCANs) with 300,000 keys, %d without: the cost grows with the keyspace",
				bigTotal, big["scan"], smallTotal)
		}
	}
}

// Concurrent scrapes share one reading of Redis: three Collects that
// overlap send one Stats script per queue in all, and all three report
// every queue.
func TestConcurrentScrapesShareOneRead(t *testing.T) {
	s := redistest.New(t)
	admin := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer admin.Close()
	seedQueues(t, admin, 3)
	h := newCounter()
	col := dqprom.NewRedisServerCollector(countedClient(t, s.Addr, h), dqprom.WithScanKeys(0))
	testutil.CollectAndCount(col) // opens the queues
	h.take()

	h.mu.Lock()
	h.hold, h.held = make(chan struct{}), false
	h.mu.Unlock()
	var wg sync.WaitGroup
	counts := make([]int, 3)
	for i := range counts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			counts[i] = testutil.CollectAndCount(col, "redisq_up")
		}()
	}
	// One Collect reads (held in its first Stats script); wait for the
	// other two to join it.
	for deadline := time.Now().Add(30 * time.Second); dqprom.Joined(col) < 2; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d Collects joined, want 2", dqprom.Joined(col))
		}
	}
	close(h.hold)
	wg.Wait()
	n, _ := h.take()
	// One reading: an SSCAN of the registry, one of the partitioned
	// queues' registry, and the 3 Stats scripts.
	if n["evalsha"]+n["eval"] != 3 || n["sscan"] != 2 {
		t.Errorf("three overlapping scrapes sent %v, want two SSCANs and 3 Stats scripts", n)
	}
	for i, c := range counts {
		if c != 3 {
			t.Errorf("scrape %d reported %d queues, want 3", i, c)
		}
	}
}

// A queue missing from the registry (written by an older version, or by
// hand as in the reproduction) is found by the bounded SCAN within
// one pass over the keyspace, registered, and forgotten once its keys are
// gone; without the SCAN it is not found.
func TestServerCollectorFindsUnregisteredQueues(t *testing.T) {
	s := redistest.New(t, "--enable-debug-command", "yes")
	c := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer c.Close()
	ctx := context.Background()
	if err := c.Do(ctx, "DEBUG", "POPULATE", 20000, "unrelated").Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Set(ctx, "{dq:legacy}:seq", 5, 0).Err(); err != nil { // an old version's sequence: a string
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(dqprom.NewRedisServerCollector(c, dqprom.WithScanKeys(0)), "redisq_up"); n != 0 {
		t.Fatalf("without the SCAN: %d queues, want 0", n)
	}
	col := dqprom.NewRedisServerCollector(c, dqprom.WithScanKeys(1000))
	scrapes := 0
	for testutil.CollectAndCount(col, "redisq_up") == 0 {
		// 20,000 keys, 1000 a scrape: one pass is about 21 scrapes.
		if scrapes++; scrapes > 200 {
			t.Fatal("not found after 200 scrapes")
		}
	}
	t.Logf("found after %d scrapes", scrapes)
	if ok, err := c.SIsMember(ctx, redisq.RegistryKey, "legacy").Result(); err != nil || !ok {
		t.Fatalf("not registered: %v %v", ok, err)
	}
	// Registered: found without the SCAN from now on.
	if n := testutil.CollectAndCount(dqprom.NewRedisServerCollector(c, dqprom.WithScanKeys(0)), "redisq_up"); n != 1 {
		t.Fatalf("registered queue: %d queues, want 1", n)
	}
	if err := c.Del(ctx, "{dq:legacy}:seq").Err(); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(col, "redisq_up"); n != 0 {
		t.Fatalf("%d queues after deleting the only one", n)
	}
}

// WithTimeout bounds a scrape's Redis work: with no time at all, every
// queue reports redisq_up 0 and the deadline, and a server-wide collector
// fails the scrape saying so.
func TestScrapeTimeout(t *testing.T) {
	s := redistest.New(t)
	c := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer c.Close()
	q := newQueue(t, c, "q")
	col := dqprom.NewRedisCollectorWithOptions([]*redisq.Queue{q}, dqprom.WithTimeout(time.Nanosecond))
	if err := testutil.CollectAndCompare(col, strings.NewReader(`
# HELP redisq_scrape_error 1 for each queue whose stats could not be read at this scrape (redisq_up 0); the error label says why.
# TYPE redisq_scrape_error gauge
redisq_scrape_error{error="context deadline exceeded",queue="q"} 1
# HELP redisq_up 1 if the queue's stats were read at this scrape, else 0.
# TYPE redisq_up gauge
redisq_up{queue="q"} 0
`)); err != nil {
		t.Fatal(err)
	}
	_, err := testutil.CollectAndLint(dqprom.NewRedisServerCollector(c, dqprom.WithTimeout(time.Nanosecond)))
	if err == nil || !strings.Contains(err.Error(), "context deadline exceeded") {
		t.Fatalf("server-wide scrape with no time: %v", err)
	}
}
