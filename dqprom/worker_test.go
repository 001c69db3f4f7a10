package dqprom_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
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
	for _, id := range []string{"ok1", "ok2", "fail", "skip", "panic", "snooze", "slow"} {
		if _, err := q.EnqueueAfter(ctx, id, nil, 0); err != nil {
			t.Fatal(err)
		}
	}
	m := dqprom.NewWorkerMetrics()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(m)
	slow, release := make(chan struct{}), make(chan struct{})
	handled := make(chan struct{}, 7)
	w := redisq.NewWorker(q, func(ctx context.Context, msg *redisq.Message) error {
		defer func() { handled <- struct{}{} }()
		switch msg.ID {
		case "fail":
			return errors.New("boom")
		case "skip":
			return redisq.SkipRetry(errors.New("bad"))
		case "panic":
			panic("oops")
		case "snooze": // not a failure
			return redisq.Snooze(time.Hour)
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
	for range 6 { // the others
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
redisq_worker_in_flight{kind="",queue="`+label+`"} `+strconv.Itoa(n)+`
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
	for testutil.ToFloat64(must(t, m, "redisq_worker_handled_total")) < 7 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if err := testutil.CollectAndCompare(m, strings.NewReader(`
# HELP redisq_worker_failed_total Handler runs of redisq workers that failed: returned an error (a Snooze is none) or panicked.
# TYPE redisq_worker_failed_total counter
redisq_worker_failed_total{kind="",queue="`+label+`"} 3
# HELP redisq_worker_handled_total Handler runs of redisq workers that returned or panicked.
# TYPE redisq_worker_handled_total counter
redisq_worker_handled_total{kind="",queue="`+label+`"} 7
# HELP redisq_worker_in_flight Handlers of redisq workers running now.
# TYPE redisq_worker_in_flight gauge
redisq_worker_in_flight{kind="",queue="`+label+`"} 0
# HELP redisq_worker_panics_total Handler runs of redisq workers that panicked.
# TYPE redisq_worker_panics_total counter
redisq_worker_panics_total{kind="",queue="`+label+`"} 1
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

// seriesKey is the queue, kind and outcome labels of one series.
type seriesKey struct{ queue, kind, outcome string }

// workerSeries gathers g and returns the value of every series of the
// named family (a histogram's sample count), by its labels, checking that
// every series has exactly the labels queue, kind (and outcome for the
// histogram).
func workerSeries(t *testing.T, g prometheus.Gatherer, family string) map[seriesKey]float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[seriesKey]float64{}
	for _, mf := range mfs {
		if mf.GetName() != family {
			continue
		}
		for _, mt := range mf.GetMetric() {
			var k seriesKey
			names := ""
			for _, lp := range mt.GetLabel() {
				names += lp.GetName() + ","
				switch lp.GetName() {
				case "queue":
					k.queue = lp.GetValue()
				case "kind":
					k.kind = lp.GetValue()
				case "outcome":
					k.outcome = lp.GetValue()
				}
			}
			want := "kind,queue,"
			if family == "redisq_worker_handler_duration_seconds" {
				want = "kind,outcome,queue,"
			}
			if names != want {
				t.Fatalf("%s: labels %s, want %s", family, names, want)
			}
			switch {
			case mt.GetCounter() != nil:
				out[k] = mt.GetCounter().GetValue()
			case mt.GetGauge() != nil:
				out[k] = mt.GetGauge().GetValue()
			case mt.GetHistogram() != nil:
				out[k] = float64(mt.GetHistogram().GetSampleCount())
			}
		}
	}
	return out
}

// The issue: worker series are labelled by kind as well as queue. A worker
// over a Mux with the kinds a and b and a handler for messages without a
// kind reports each kind apart, kind="" for no kind.
func TestWorkerMetricsKinds(t *testing.T) {
	s := redistest.New(t)
	c := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer c.Close()
	ctx := context.Background()
	q := newQueue(t, c, "jobs", redisq.WithMaxAttempts(1))
	for _, it := range []struct{ id, kind string }{
		{"a1", "a"}, {"a2", "a"}, {"a3", "a"}, {"b-fail", "b"}, {"b-panic", "b"}, {"none", ""},
	} {
		if _, err := q.Add(ctx, redisq.EnqueueItem{ID: it.id, Job: redisq.Job{Kind: it.kind}}); err != nil {
			t.Fatal(err)
		}
	}
	m := dqprom.NewWorkerMetrics()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(m)
	handled := make(chan struct{}, 6)
	release := make(chan struct{})
	var ranA3 atomic.Bool
	mux := redisq.NewMux()
	mux.Handle("a", func(ctx context.Context, msg *redisq.Message) error {
		defer func() { handled <- struct{}{} }()
		if msg.ID == "a3" {
			ranA3.Store(true)
			<-release
		}
		return nil
	})
	mux.Handle("b", func(ctx context.Context, msg *redisq.Message) error {
		defer func() { handled <- struct{}{} }()
		if msg.ID == "b-panic" {
			panic("oops")
		}
		return errors.New("boom")
	})
	mux.Handle("", func(ctx context.Context, msg *redisq.Message) error {
		defer func() { handled <- struct{}{} }()
		return nil
	})
	w := redisq.NewWorker(q, mux.Serve, redisq.WorkerOptions{Concurrency: 6,
		Middleware: []redisq.Middleware{m.Middleware()}, Logger: slog.New(slog.DiscardHandler)})
	res := make(chan error, 1)
	go func() { res <- w.Run(ctx) }()
	defer func() {
		_ = w.Shutdown(ctx)
		if err := <-res; err != nil {
			t.Error(err)
		}
	}()
	for range 5 { // all but a3
		select {
		case <-handled:
		case <-time.After(10 * time.Second):
			t.Fatal("not handled")
		}
	}
	// a3 alone is in flight, under kind a.
	deadline := time.Now().Add(5 * time.Second)
	// The middleware counts a run out after its handler has returned.
	five := map[seriesKey]float64{{"jobs", "a", ""}: 2, {"jobs", "b", ""}: 2, {"jobs", "", ""}: 1}
	for (!ranA3.Load() || !maps.Equal(workerSeries(t, reg, "redisq_worker_handled_total"), five)) && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if got, want := workerSeries(t, reg, "redisq_worker_in_flight"), map[seriesKey]float64{
		{"jobs", "a", ""}: 1, {"jobs", "b", ""}: 0, {"jobs", "", ""}: 0,
	}; !maps.Equal(got, want) {
		t.Errorf("in flight: %v, want %v", got, want)
	}
	close(release)
	select {
	case <-handled:
	case <-time.After(10 * time.Second):
		t.Fatal("a3 not handled")
	}
	deadline = time.Now().Add(5 * time.Second)
	for workerSeries(t, reg, "redisq_worker_handled_total")[seriesKey{"jobs", "a", ""}] < 3 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if err := testutil.CollectAndCompare(m, strings.NewReader(`
# HELP redisq_worker_failed_total Handler runs of redisq workers that failed: returned an error (a Snooze is none) or panicked.
# TYPE redisq_worker_failed_total counter
redisq_worker_failed_total{kind="b",queue="jobs"} 2
# HELP redisq_worker_handled_total Handler runs of redisq workers that returned or panicked.
# TYPE redisq_worker_handled_total counter
redisq_worker_handled_total{kind="a",queue="jobs"} 3
redisq_worker_handled_total{kind="b",queue="jobs"} 2
redisq_worker_handled_total{kind="",queue="jobs"} 1
# HELP redisq_worker_in_flight Handlers of redisq workers running now.
# TYPE redisq_worker_in_flight gauge
redisq_worker_in_flight{kind="a",queue="jobs"} 0
redisq_worker_in_flight{kind="b",queue="jobs"} 0
redisq_worker_in_flight{kind="",queue="jobs"} 0
# HELP redisq_worker_panics_total Handler runs of redisq workers that panicked.
# TYPE redisq_worker_panics_total counter
redisq_worker_panics_total{kind="b",queue="jobs"} 1
`), "redisq_worker_handled_total", "redisq_worker_failed_total", "redisq_worker_panics_total", "redisq_worker_in_flight"); err != nil {
		t.Error(err)
	}
	if got, want := workerSeries(t, reg, "redisq_worker_handler_duration_seconds"), map[seriesKey]float64{
		{"jobs", "a", "ok"}: 3, {"jobs", "b", "error"}: 1, {"jobs", "b", "panic"}: 1, {"jobs", "", "ok"}: 1,
	}; !maps.Equal(got, want) {
		t.Errorf("duration counts: %v, want %v", got, want)
	}
}

// runMiddleware runs the messages, in order, through m's Middleware around
// a handler that returns nil.
func runMiddleware(t *testing.T, m *dqprom.WorkerMetrics, msgs []*redisq.Message) {
	t.Helper()
	h := m.Middleware()(func(context.Context, *redisq.Message) error { return nil })
	for _, msg := range msgs {
		if err := h(context.Background(), msg); err != nil {
			t.Fatal(err)
		}
	}
}

// takeAll leases the n items of q, sorted by id.
func takeAll(t *testing.T, q *redisq.Queue, n int) []*redisq.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var msgs []*redisq.Message
	for len(msgs) < n {
		ms, err := q.TakeBatch(ctx, min(n-len(msgs), redisq.MaxBatch))
		if err != nil {
			t.Fatalf("took %d of %d: %v", len(msgs), n, err)
		}
		msgs = append(msgs, ms...)
	}
	slices.SortFunc(msgs, func(a, b *redisq.Message) int { return strings.Compare(a.ID, b.ID) })
	return msgs
}

// hostileKinds are kinds Enqueue accepts (at most MaxKindLen bytes of
// UTF-8) that a label cannot hold as they are.
var hostileKinds = []string{"ctl\x1b[31m\n\t", "\u202egnp.exe", `back\slash`, `"quoted"`, "c1\u0085",
	strings.Repeat("é", redisq.MaxKindLen/2)}

// At most MaxKindLabels kinds of a queue get a label of their own: the
// runs of later kinds are counted under kind="other", while the kinds
// seen first keep theirs, messages without a kind keep kind="", and
// another queue has a bound of its own. Real messages (leased by
// TakeBatch: a zero Message has no queue, and its QueueName panics) go
// through the Middleware in a known order, and the scrape of it all is
// valid.
func TestWorkerMetricsKindBound(t *testing.T) {
	s := redistest.New(t)
	c := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer c.Close()
	ctx := context.Background()
	kind := func(i int) string { return fmt.Sprintf("k%03d", i) }
	const over = 20
	// m000..m119 of kinds k000..k119 (hostile kinds among the first), then
	// m120 of kind k000 again and m121, m122 without a kind.
	var items []redisq.EnqueueItem
	for i := range dqprom.MaxKindLabels + over {
		k := kind(i)
		if i < len(hostileKinds) {
			k = hostileKinds[i]
		}
		items = append(items, redisq.EnqueueItem{ID: fmt.Sprintf("m%03d", i), Job: redisq.Job{Kind: k}})
	}
	items = append(items,
		redisq.EnqueueItem{ID: fmt.Sprintf("m%03d", dqprom.MaxKindLabels+over), Job: redisq.Job{Kind: items[0].Job.Kind}},
		redisq.EnqueueItem{ID: fmt.Sprintf("m%03d", dqprom.MaxKindLabels+over+1)},
		redisq.EnqueueItem{ID: fmt.Sprintf("m%03d", dqprom.MaxKindLabels+over+2)})
	q := newQueue(t, c, "many")
	if _, err := q.EnqueueMany(ctx, items); err != nil {
		t.Fatal(err)
	}
	// Another queue: one kind past the first queue's bound.
	q2 := newQueue(t, c, "second")
	late := kind(dqprom.MaxKindLabels + over - 1)
	if _, err := q2.Add(ctx, redisq.EnqueueItem{ID: "x", Job: redisq.Job{Kind: late}}); err != nil {
		t.Fatal(err)
	}

	m := dqprom.NewWorkerMetrics()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(m)
	msgs := takeAll(t, q, len(items))
	for i, msg := range msgs {
		if msg.ID != items[i].ID || msg.Kind != items[i].Job.Kind {
			t.Fatalf("message %d: %q of kind %q, want %q of kind %q", i, msg.ID, msg.Kind, items[i].ID, items[i].Job.Kind)
		}
	}
	runMiddleware(t, m, msgs)
	runMiddleware(t, m, takeAll(t, q2, 1))

	want := map[seriesKey]float64{{"many", "", ""}: 2, {"many", dqprom.OtherKind, ""}: over, {"second", late, ""}: 1}
	for i := range dqprom.MaxKindLabels {
		want[seriesKey{"many", dqprom.QueueLabel(items[i].Job.Kind), ""}] = 1
	}
	want[seriesKey{"many", dqprom.QueueLabel(items[0].Job.Kind), ""}] = 2 // m120: seen before the bound
	if got := workerSeries(t, reg, "redisq_worker_handled_total"); !maps.Equal(got, want) {
		t.Errorf("handled: %d series, want %d:\n got %v\nwant %v", len(got), len(want), got, want)
	}
	kinds := map[string]bool{}
	for k := range workerSeries(t, reg, "redisq_worker_handler_duration_seconds") {
		if k.queue == "many" {
			kinds[k.kind] = true
		}
		checkLabel(t, k.kind)
	}
	if len(kinds) != dqprom.MaxKindLabels+2 {
		t.Errorf("%d kind labels in queue many, want %d", len(kinds), dqprom.MaxKindLabels+2)
	}
	code, body := scrape(t, reg)
	if code != http.StatusOK {
		t.Fatalf("scrape: %d\n%.2000s", code, body)
	}
	if want := `redisq_worker_handled_total{kind="other",queue="many"} ` + strconv.Itoa(over) + "\n"; !strings.Contains(body, want) {
		t.Errorf("body lacks %q", want)
	}
}

// The kind labels, without Redis: every kind, however odd (not UTF-8, too
// long, control and bidi characters), gets a valid, bounded, printable
// label of its own, as QueueLabel gives a queue name; "" stays ""; and
// past MaxKindLabels kinds of one queue, new ones are "other".
func TestWorkerKindLabels(t *testing.T) {
	m := dqprom.NewWorkerMetrics()
	seen := map[string]string{}
	for _, k := range hostileNames {
		q, l := dqprom.WorkerLabels(m, "q\xff", k)
		if q != dqprom.QueueLabel("q\xff") {
			t.Fatalf("queue label %q", q)
		}
		checkLabel(t, l)
		if l != dqprom.QueueLabel(k) {
			t.Errorf("kind %q: label %q, want %q", trunc(k), l, dqprom.QueueLabel(k))
		}
		if o, ok := seen[l]; ok {
			t.Errorf("kinds %q and %q share the label %q", trunc(o), trunc(k), l)
		}
		seen[l] = k
	}
	for _, c := range []struct{ kind, label string }{
		{"refund", "refund"}, {"", ""}, {"bad\xff", `bad\xff`}, {"\u202egnp", `\u202egnp`},
	} {
		if _, l := dqprom.WorkerLabels(m, "p", c.kind); l != c.label {
			t.Errorf("kind %q: label %q, want %q", c.kind, l, c.label)
		}
	}
	// Queue p has 3 kinds ("" does not count): 97 more fill the bound.
	for i := range dqprom.MaxKindLabels - 3 {
		k := fmt.Sprint("k", i)
		if _, l := dqprom.WorkerLabels(m, "p", k); l != k {
			t.Fatalf("kind %d of %d: label %q, want %q", i+4, dqprom.MaxKindLabels, l, k)
		}
	}
	for i := range 1000 {
		if _, l := dqprom.WorkerLabels(m, "p", fmt.Sprint("late", i)); l != dqprom.OtherKind {
			t.Fatalf("kind %d past the bound: label %q, want %q", i+1, l, dqprom.OtherKind)
		}
	}
	for k, l := range map[string]string{"refund": "refund", "k0": "k0", "bad\xff": `bad\xff`, "": "", "late0": "other"} {
		if _, got := dqprom.WorkerLabels(m, "p", k); got != l {
			t.Errorf("after the bound, kind %q: label %q, want %q", k, got, l)
		}
	}
	if _, l := dqprom.WorkerLabels(m, "other queue", "late0"); l != "late0" {
		t.Errorf("another queue's kind: label %q, want late0", l)
	}
}
