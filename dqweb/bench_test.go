package dqweb_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dq-go/delayqueue/dqweb"
	"github.com/dq-go/delayqueue/dqweb/internal/webtest"
	"github.com/dq-go/delayqueue/redisq"
	"github.com/redis/go-redis/v9"
)

func TestFillIsAQueue(t *testing.T) {
	f := webtest.NewFixture(t, dqweb.Options{})
	webtest.Fill(t, f.C, "orders", 1000)
	rep, err := f.Q.Audit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("the filled queue fails Audit: %v", rep.Problems)
	}
	st, err := f.Q.Stats(context.Background())
	if err != nil || st.Scheduled != 1011 || st.Enqueued != 1016 {
		t.Fatalf("stats after filling 1000: %+v %v", st, err)
	}
}

// BenchmarkPages1M serves each page of a queue with a million scheduled
// items (plus the fixture's), through the handler, against a local
// redis-server: the dashboard's cost is bounded, not proportional to n.
// overview-uncached lists the queues from the registry on every request.
// jobs-summary and jobs-recurring-tab are the pages of a queue "jobs" with
// 100 recurring registrations.
func BenchmarkPages1M(b *testing.B) {
	f := webtest.NewFixture(b, dqweb.Options{})
	webtest.Fill(b, f.C, "orders", 1_000_000)
	jobs, err := redisq.New(context.Background(), f.C, "jobs")
	if err != nil {
		b.Fatal(err)
	}
	defer jobs.Close()
	for i := range 100 {
		if _, err := jobs.Register(context.Background(), fmt.Sprintf("job:%03d", i), redisq.Every(time.Hour), []byte("{}")); err != nil {
			b.Fatal(err)
		}
	}
	cached := dqweb.Handler(f.C, dqweb.Options{Prefix: "/dq/"})
	uncached := dqweb.Handler(f.C, dqweb.Options{Prefix: "/dq/", QueueListTTL: time.Nanosecond})
	for _, p := range []struct {
		name string
		h    http.Handler
		path string
		code int
	}{
		{"queue", cached, "/dq/queue?q=orders", 200},
		{"scheduled-tab", cached, "/dq/queue?q=orders&state=scheduled", 200},
		{"scheduled-deep-page", cached, "/dq/queue?q=orders&state=scheduled&offset=900000", 200},
		{"dead-tab", cached, "/dq/queue?q=orders&state=dead", 200},
		{"jobs-summary", cached, "/dq/queue?q=jobs", 200},
		{"jobs-recurring-tab", cached, "/dq/queue?q=jobs&state=recurring", 200},
		{"find", cached, "/dq/queue?q=orders&find=item:123456", http.StatusSeeOther},
		{"item", cached, "/dq/item?q=orders&id=item:123456", 200},
		{"overview", cached, "/dq/", 200},
		{"overview-uncached", uncached, "/dq/", 200},
	} {
		b.Run("page="+p.name, func(b *testing.B) {
			serve := func() {
				rec := httptest.NewRecorder()
				req := httptest.NewRequest(http.MethodGet, p.path, nil)
				req.Host = "127.0.0.1" // httptest's example.com is refused
				p.h.ServeHTTP(rec, req)
				if rec.Code != p.code {
					b.Fatalf("%s: %d\n%s", p.path, rec.Code, rec.Body)
				}
			}
			serve() // untimed: loads the scripts and (overview) the list of queues
			for b.Loop() {
				serve()
			}
		})
	}
}

// redisUsec returns the microseconds Redis has spent running commands
// (INFO commandstats, every command).
func redisUsec(tb testing.TB, c *redis.Client) int64 {
	tb.Helper()
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		tb.Fatal(err)
	}
	var total int64
	for _, line := range strings.Split(info, "\r\n") {
		_, stats, ok := strings.Cut(line, ":")
		if !strings.HasPrefix(line, "cmdstat_") || !ok {
			continue
		}
		for _, kv := range strings.Split(stats, ",") {
			if v, ok := strings.CutPrefix(kv, "usec="); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				total += n
			}
		}
	}
	return total
}

// BenchmarkPayloadRedisTime measures what reading payloads costs Redis
// (redis-us/op: its time running commands, from INFO commandstats):
// read=SIZE is one GetPrefix of 1 KiB of a payload of SIZE (Redis copies
// the whole payload to cut it), item=SIZE the item page of such a payload
// (its size, its payload if at most ItemPayloadBytes, TIME and the
// queue's existence), with no payload budget.
func BenchmarkPayloadRedisTime(b *testing.B) {
	f := webtest.NewFixture(b, dqweb.Options{})
	ctx := context.Background()
	sizes := []int{1 << 10, 16 << 10, 64 << 10, 1 << 20}
	for _, n := range sizes {
		if _, err := f.Q.EnqueueAfter(ctx, fmt.Sprint("p", n), bytes.Repeat([]byte("x"), n), time.Hour); err != nil {
			b.Fatal(err)
		}
	}
	h := dqweb.Handler(f.C, dqweb.Options{Prefix: "/dq/", PayloadBytesPerSecond: -1})
	for _, n := range sizes {
		b.Run(fmt.Sprint("read=", n>>10, "KiB"), func(b *testing.B) {
			before := redisUsec(b, f.C)
			for b.Loop() {
				if _, err := f.Q.GetPrefix(ctx, fmt.Sprint("p", n), 1<<10); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(redisUsec(b, f.C)-before)/float64(b.N), "redis-us/op")
		})
	}
	for _, n := range sizes {
		b.Run(fmt.Sprint("item=", n>>10, "KiB"), func(b *testing.B) {
			before := redisUsec(b, f.C)
			for b.Loop() {
				rec := httptest.NewRecorder()
				req := httptest.NewRequest(http.MethodGet, fmt.Sprint("/dq/item?q=orders&id=p", n), nil)
				req.Host = "127.0.0.1"
				h.ServeHTTP(rec, req)
				if rec.Code != 200 {
					b.Fatalf("%d\n%s", rec.Code, rec.Body)
				}
			}
			b.ReportMetric(float64(redisUsec(b, f.C)-before)/float64(b.N), "redis-us/op")
		})
	}
}

// BenchmarkLoopingViewers has 20 clients view the item page of a payload
// of SIZE in a loop, with the default payload budget, for a second per
// op (run it with -benchtime 5x): redis-busy-% is the share of the time
// Redis spent running commands, ping-p50-us the median of a PING sent
// every 10 ms meanwhile, views/s the pages served.
func BenchmarkLoopingViewers(b *testing.B) {
	f := webtest.NewFixture(b, dqweb.Options{})
	ctx := context.Background()
	sizes := []int{64 << 10, 1 << 20}
	for _, n := range sizes {
		if _, err := f.Q.EnqueueAfter(ctx, fmt.Sprint("p", n), bytes.Repeat([]byte("x"), n), time.Hour); err != nil {
			b.Fatal(err)
		}
	}
	srv := httptest.NewServer(dqweb.Handler(f.C, dqweb.Options{Prefix: "/dq/"}))
	defer srv.Close()
	pinger := redis.NewClient(f.C.Options())
	defer pinger.Close()
	for _, n := range sizes {
		b.Run(fmt.Sprint("item=", n>>10, "KiB"), func(b *testing.B) {
			var views atomic.Int64
			var pings []time.Duration
			var elapsed time.Duration
			before := redisUsec(b, f.C)
			for b.Loop() {
				start := time.Now()
				var wg sync.WaitGroup
				for range 20 {
					wg.Go(func() {
						c := &http.Client{}
						for time.Since(start) < time.Second {
							resp, err := c.Get(fmt.Sprint(srv.URL, "/dq/item?q=orders&id=p", n))
							if err != nil {
								b.Error(err)
								return
							}
							_, _ = io.Copy(io.Discard, resp.Body)
							_ = resp.Body.Close()
							views.Add(1)
						}
					})
				}
				for time.Since(start) < time.Second {
					t0 := time.Now()
					if err := pinger.Ping(ctx).Err(); err != nil {
						b.Fatal(err)
					}
					pings = append(pings, time.Since(t0))
					time.Sleep(10 * time.Millisecond)
				}
				wg.Wait()
				elapsed += time.Since(start)
			}
			slices.Sort(pings)
			b.ReportMetric(100*float64(redisUsec(b, f.C)-before)/float64(elapsed.Microseconds()), "redis-busy-%")
			b.ReportMetric(float64(pings[len(pings)/2].Microseconds()), "ping-p50-us")
			b.ReportMetric(float64(views.Load())/elapsed.Seconds(), "views/s")
		})
	}
}

// redisScriptUsec returns the microseconds Redis has spent running
// scripts (EVALSHA and EVAL in INFO commandstats). Unlike redisUsec, it
// does not count the commands a script calls a second time.
func redisScriptUsec(tb testing.TB, c *redis.Client) int64 {
	tb.Helper()
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		tb.Fatal(err)
	}
	var total int64
	for _, line := range strings.Split(info, "\r\n") {
		name, stats, ok := strings.Cut(line, ":")
		if !ok || (name != "cmdstat_evalsha" && name != "cmdstat_eval") {
			continue
		}
		for _, kv := range strings.Split(stats, ",") {
			if v, ok := strings.CutPrefix(kv, "usec="); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				total += n
			}
		}
	}
	return total
}

// BenchmarkSickQueuePages measures the views of issue 24, item 15 (time
// per page, and script-us/op, Redis' time running the page's scripts,
// nearly all its work):
// dead-tab is the dead tab of a queue of 20,000 dead items of 20 causes
// (the grouping of the oldest 10,000: ten scripts), dead-page-2 its second
// page (no grouping), dead-cause the list of one cause (which counts it),
// dead-cause-confirm the confirmation of requeuing it (which counts it
// again); workers-tab, inflight-tab and summary are the pages of
// a queue that 50 Workers of 4 handlers work on (200 leases held, 1,000
// items due); overview-sorted sorts 105 queues by their oldest overdue
// item (a Stats of each, and the Workers of those with due items).
func BenchmarkSickQueuePages(b *testing.B) {
	f := webtest.NewFixture(b, dqweb.Options{})
	ctx := context.Background()
	must := func(err error) {
		b.Helper()
		if err != nil {
			b.Fatal(err)
		}
	}
	grave, err := redisq.New(ctx, f.C, "graveyard", redisq.WithMaxAttempts(1))
	must(err)
	defer grave.Close()
	for from := 0; from < 20_000; from += 1000 {
		items := make([]redisq.EnqueueItem, 1000)
		for i := range items {
			// Due long ago: the TakeBatch below takes all 1,000 (an item
			// due "now" is due at the next ms of Redis TIME, and the 5
			// scripts of an EnqueueMany of 1,000 read it apart).
			items[i] = redisq.EnqueueItem{ID: fmt.Sprint("g", from+i), Payload: []byte("{}"), At: time.Unix(1, 0)}
		}
		_, err := grave.EnqueueMany(ctx, items)
		must(err)
		ms, err := grave.TakeBatch(ctx, 1000)
		must(err)
		for i, m := range ms {
			_, err := m.DeadLetter(ctx, fmt.Sprintf("cause %d: upstream said no", (from+i)%20))
			must(err)
		}
	}
	busy, err := redisq.New(ctx, f.C, "busy")
	must(err)
	defer busy.Close()
	items := make([]redisq.EnqueueItem, 1200)
	for i := range items {
		items[i] = redisq.EnqueueItem{ID: fmt.Sprint("job:", i), Payload: []byte("{}")}
	}
	_, err = busy.EnqueueMany(ctx, items)
	must(err)
	release := make(chan struct{})
	var workers []*redisq.Worker
	var wg sync.WaitGroup
	for i := range 50 {
		w := redisq.NewWorker(busy, func(ctx context.Context, m *redisq.Message) error {
			select {
			case <-release:
			case <-ctx.Done():
			}
			return nil
		}, redisq.WorkerOptions{Concurrency: 4, Name: fmt.Sprintf("busy-%02d", i), NoRecurring: true, Heartbeat: time.Second})
		workers = append(workers, w)
		wg.Go(func() { _ = w.Run(ctx) })
	}
	defer func() {
		close(release)
		for _, w := range workers {
			sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			_ = w.Shutdown(sctx)
			cancel()
		}
		wg.Wait()
	}()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		ws, err := busy.Workers(ctx)
		must(err)
		running := 0
		for _, w := range ws {
			running += len(w.Leases)
		}
		if len(ws) == 50 && running == 200 {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d workers beating, %d leases listed", len(ws), running)
		}
	}
	for i := range 100 {
		q, err := redisq.New(ctx, f.C, fmt.Sprintf("q%03d", i))
		must(err)
		must(q.Enqueue(ctx, "x", nil, time.Now().Add(-time.Duration(i)*time.Second)))
	}
	h := dqweb.Handler(f.C, dqweb.Options{Prefix: "/dq/"})
	cause := "cause+7%3A+upstream+said+no"
	for _, p := range []struct {
		name, method, path string
		code               int
	}{
		{"dead-tab", http.MethodGet, "/dq/queue?q=graveyard&state=dead", 200},
		{"dead-page-2", http.MethodGet, "/dq/queue?q=graveyard&state=dead&offset=20", 200},
		{"dead-cause", http.MethodGet, "/dq/queue?q=graveyard&state=dead&reason=" + cause, 200},
		{"dead-cause-confirm", http.MethodPost, "op=requeue-reason&q=graveyard&reason=" + cause, 200},
		{"workers-tab", http.MethodGet, "/dq/queue?q=busy&state=workers", 200},
		{"inflight-tab", http.MethodGet, "/dq/queue?q=busy&state=inflight", 200},
		{"summary", http.MethodGet, "/dq/queue?q=busy", 200},
		{"overview-sorted", http.MethodGet, "/dq/?sort=overdue", 200},
	} {
		b.Run("page="+p.name, func(b *testing.B) {
			serve := func() {
				rec := httptest.NewRecorder()
				var req *http.Request
				if p.method == http.MethodGet {
					req = httptest.NewRequest(http.MethodGet, p.path, nil)
				} else {
					req = httptest.NewRequest(http.MethodPost, "/dq/action", strings.NewReader(p.path+"&csrf="+strings.Repeat("A", 43)))
					req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
					req.Header.Set("Sec-Fetch-Site", "same-origin")
					req.AddCookie(&http.Cookie{Name: "dqweb_csrf", Value: strings.Repeat("A", 43)})
				}
				req.Host = "127.0.0.1" // httptest's example.com is refused
				h.ServeHTTP(rec, req)
				if rec.Code != p.code {
					b.Fatalf("%s: %d\n%.2000s", p.path, rec.Code, rec.Body)
				}
			}
			serve() // untimed: loads the scripts
			before := redisScriptUsec(b, f.C)
			for b.Loop() {
				serve()
			}
			b.ReportMetric(float64(redisScriptUsec(b, f.C)-before)/float64(b.N), "script-us/op")
		})
	}
}
