package dqprom_test

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dq-go/delayqueue/dqprom"
	"github.com/dq-go/delayqueue/redisq"
	"github.com/dq-go/delayqueue/redisq/redistest"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"
)

// WorkerMetrics counts handled, failed and panicking runs per queue,
// handlers in flight, and times each run by outcome.
func TestWorkerMetrics(t *testing.T) {
	s := redistest.New(t)
	c := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer c.Close()
	ctx := context.Background()
	q := newQueue(t, c, "mail\xff", redisq.WithMaxAttempts(1)) // not UTF-8: labelled by QueueLabel
	for _, id := range []string{"ok1", "ok2", "fail", "skip", "panic", "slow"} {
		if _, err := q.EnqueueAfter(ctx, id, nil, 0); err != nil {
			t.Fatal(err)
		}
	}
	m := dqprom.NewWorkerMetrics()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(m)
	slow, release := make(chan struct{}), make(chan struct{})
	handled := make(chan struct{}, 6)
	w := redisq.NewWorker(q, func(ctx context.Context, msg *redisq.Message) error {
		defer func() { handled <- struct{}{} }()
		switch msg.ID {
		case "fail":
			return errors.New("boom")
		case "skip":
			return redisq.SkipRetry(errors.New("bad"))
		case "panic":
			panic("oops")
		case "slow":
			close(slow)
			<-release
		}
		return nil
	}, redisq.WorkerOptions{Concurrency: 2, Middleware: []redisq.Middleware{m.Middleware()},
		Logger: slog.New(slog.DiscardHandler)})
	res := make(chan error, 1)
	go func() { res <- w.Run(ctx) }()
	defer func() {
		_ = w.Shutdown(ctx)
		if err := <-res; err != nil {
			t.Error(err)
		}
	}()

	select {
	case <-slow:
	case <-time.After(10 * time.Second):
		t.Fatal("the slow handler did not start")
	}
	for range 5 { // the others
		select {
		case <-handled:
		case <-time.After(10 * time.Second):
			t.Fatal("not handled")
		}
	}
	// As the text format writes it: a backslash escaped.
	label := strings.ReplaceAll(dqprom.QueueLabel("mail\xff"), `\`, `\\`)
	inFlight := func(n int) error {
		return testutil.CollectAndCompare(m, strings.NewReader(`
# HELP redisq_worker_in_flight Handlers of redisq workers running now.
# TYPE redisq_worker_in_flight gauge
redisq_worker_in_flight{queue="`+label+`"} `+strconv.Itoa(n)+`
`), "redisq_worker_in_flight")
	}
	// The middleware counts a run out after its handler has returned.
	deadline := time.Now().Add(5 * time.Second)
	for inFlight(1) != nil && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if err := inFlight(1); err != nil {
		t.Error("the slow handler alone in flight:", err)
	}
	close(release)
	select {
	case <-handled:
	case <-time.After(10 * time.Second):
		t.Fatal("not handled")
	}
	deadline = time.Now().Add(5 * time.Second)
	for testutil.ToFloat64(must(t, m, "redisq_worker_handled_total")) < 6 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if err := testutil.CollectAndCompare(m, strings.NewReader(`
# HELP redisq_worker_failed_total Handler runs of redisq workers that returned an error or panicked.
# TYPE redisq_worker_failed_total counter
redisq_worker_failed_total{queue="`+label+`"} 3
# HELP redisq_worker_handled_total Handler runs of redisq workers that returned or panicked.
# TYPE redisq_worker_handled_total counter
redisq_worker_handled_total{queue="`+label+`"} 6
# HELP redisq_worker_in_flight Handlers of redisq workers running now.
# TYPE redisq_worker_in_flight gauge
redisq_worker_in_flight{queue="`+label+`"} 0
# HELP redisq_worker_panics_total Handler runs of redisq workers that panicked.
# TYPE redisq_worker_panics_total counter
redisq_worker_panics_total{queue="`+label+`"} 1
`), "redisq_worker_handled_total", "redisq_worker_failed_total", "redisq_worker_panics_total", "redisq_worker_in_flight"); err != nil {
		t.Error(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]uint64{}
	for _, mf := range mfs {
		if mf.GetName() != "redisq_worker_handler_duration_seconds" {
			continue
		}
		for _, mt := range mf.GetMetric() {
			for _, lp := range mt.GetLabel() {
				if lp.GetName() == "outcome" {
					counts[lp.GetValue()] = mt.GetHistogram().GetSampleCount()
				}
			}
		}
	}
	want := map[string]uint64{"ok": 3, "error": 1, "skip_retry": 1, "panic": 1}
	for k, v := range want {
		if counts[k] != v {
			t.Errorf("duration count for %s: %d, want %d (all: %v)", k, counts[k], v, counts)
		}
	}
}

// must returns the one-series collector of the named metric family in m,
// for testutil.ToFloat64.
func must(t *testing.T, m *dqprom.WorkerMetrics, name string) prometheus.Collector {
	t.Helper()
	return collectorFunc(func(ch chan<- prometheus.Metric) {
		all := make(chan prometheus.Metric, 100)
		m.Collect(all)
		close(all)
		for x := range all {
			if strings.Contains(x.Desc().String(), `"`+name+`"`) {
				ch <- x
			}
		}
	})
}

type collectorFunc func(chan<- prometheus.Metric)

func (f collectorFunc) Describe(chan<- *prometheus.Desc)    {}
func (f collectorFunc) Collect(ch chan<- prometheus.Metric) { f(ch) }
