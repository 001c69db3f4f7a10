package main

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dq-go/delayqueue/redisq"
)

// evilWorker is a worker name with an escape sequence and a bidi override.
const evilWorker = "wk\x1b[31m\u202e"

// startWorker runs a Worker on q whose handlers hold their message until
// the worker stops, beating every 20ms; stop ends it (its handlers' messages
// handed back) and waits for its end.
func startWorker(t *testing.T, q *redisq.Queue, name string, n int) (stop func()) {
	t.Helper()
	w := redisq.NewWorker(q, func(ctx context.Context, m *redisq.Message) error {
		<-ctx.Done()
		return ctx.Err()
	}, redisq.WorkerOptions{Name: name, Concurrency: n, Heartbeat: 20 * time.Millisecond, ShutdownTimeout: -1, NoRecurring: true})
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- w.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-ran; err != nil {
				t.Errorf("worker %q: %v", name, err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// waitWorkers waits until the live workers of a (a Queue or a
// Partitioned) satisfy ok, as their heartbeats show them.
func waitWorkers(t *testing.T, a interface {
	Workers(context.Context) ([]redisq.WorkerInfo, error)
}, what string, ok func([]redisq.WorkerInfo) bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		ws, err := a.Workers(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if ok(ws) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: workers %+v", what, ws)
		}
	}
}

// running is how many handlers each worker runs, by name.
func running(ws []redisq.WorkerInfo) map[string]int {
	m := map[string]int{}
	for _, w := range ws {
		m[w.Name] += w.Running
	}
	return m
}

// TestWorkers (issue 24, item 15, "who holds the work"): workers lists the
// live Workers from their heartbeats with host, pid, since when, last beat,
// handlers running and the messages they run, the first 10 of each unless
// -full; once they stop it says that items are due and no worker is alive.
func TestWorkers(t *testing.T) {
	f := newFixture(t, "orders") // f1 in flight, held by no worker
	ctx := context.Background()
	a := []string{"-redis", f.addr}
	r := dqctl(t, "", append(a, "workers", "orders")...)
	r.want(t, exitOK, `queue "orders" on `+f.addr+" at ", "no live worker (nothing is due)\n",
		"1 item in flight, held by no live worker: by consumers calling Take, or by a\nprocess that died", "a consumer calling Take itself\nwrites none.)\n")

	var items []redisq.EnqueueItem
	for i := range 13 {
		items = append(items, redisq.EnqueueItem{ID: fmt.Sprintf("w%02d", i)})
	}
	enqueueAll(t, f.q, items)
	stopMailer := startWorker(t, f.q, "mailer", 12)
	waitWorkers(t, f.q, "mailer runs 12", func(ws []redisq.WorkerInfo) bool { return running(ws)["mailer"] == 12 })
	stopEvil := startWorker(t, f.q, evilWorker, 1)
	waitWorkers(t, f.q, "both run", func(ws []redisq.WorkerInfo) bool { return running(ws)["mailer"] == 12 && running(ws)[evilWorker] == 1 })

	r = dqctl(t, "", append(a, "workers", "orders")...)
	r.want(t, exitOK, "NAME  ", "  HOST  ", "  PID  ", "  STARTED  ", "  LAST BEAT  ", "  RUNNING  ", "  HELD\n",
		"2 live workers: 13 of 13 handlers running, ", "; in flight 14, due 0\n", "  and 2 more (-full: all)\n")
	// A time of 0 ms ago reads "now" (rel).
	ago := `(?:\S+ ago|now)`
	abs := `(\d{4}-\d\d-\d\dT)?\d\d:\d\d:\d\dZ`
	for _, want := range []string{
		`(?m)^mailer +\S+ +\d+ +` + ago + ` \(` + abs + `\) +` + ago + ` +12/12 +\d+$`,
		`(?m)^"wk\\x1b\[31m\\u202e" +\S+ +\d+ +` + ago + ` \(` + abs + `\) +` + ago + ` +1/1 +\d+$`,
		`(?m)^mailer \(host \S+, pid \d+, worker [0-9a-f]{16}\) runs:\n  ID +CLAIMED +ATTEMPT\n(  w\d\d +` + ago + ` \(` + abs + `\) +1\n){10}  and 2 more`,
		`(?m)^"wk\\x1b\[31m\\u202e" \(host \S+, pid \d+, worker [0-9a-f]{16}\) runs:\n  ID +CLAIMED +ATTEMPT\n  w\d\d +` + ago + ` \(` + abs + `\) +1\n\n?`,
	} {
		if !regexp.MustCompile(want).MatchString(r.stdout) {
			t.Errorf("workers lacks %s:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "PARTITION") || strings.Contains(r.stdout, "NO LIVE WORKER") {
		t.Errorf("an ordinary queue's workers with a partition, or said dead:\n%s", r.stdout)
	}
	r = dqctl(t, "", append(a, "workers", "orders", "-full")...)
	if n := regexp.MustCompile(`(?m)^  w\d\d `).FindAllString(r.stdout, -1); len(n) != 13 || strings.Contains(r.stdout, "more") {
		t.Errorf("workers -full: %d leases, want 13:\n%s", len(n), r.stdout)
	}

	var out struct {
		Queue    string
		Due      int64
		InFlight int64 `json:"inflight"`
		Workers  []struct {
			Name, Host, ID string
			Queue          string
			PID            int
			Running        int
			Concurrency    int
			Started, Beat  time.Time
			Expires        time.Time
			Partition      *int
			Leases         []struct{ ID string }
			MoreLeases     int `json:"more_leases"`
		}
	}
	r = dqctl(t, "", append(a, "workers", "orders", "-json")...)
	r.want(t, exitOK, `"name": "wk\u001b[31m\u202e"`)
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || out.Queue != "orders" || out.InFlight != 14 || len(out.Workers) != 2 {
		t.Fatalf("workers -json: %v %+v\n%s", err, out, r.stdout)
	}
	if w := out.Workers[0]; w.Name != "mailer" || w.Queue != "orders" || w.Running != 12 || w.Concurrency != 12 || len(w.Leases) != 12 ||
		w.Partition != nil || w.PID == 0 || w.Started.After(w.Beat) || !w.Expires.After(w.Beat) || len(w.ID) != 16 {
		t.Errorf("workers -json mailer: %+v", w)
	}

	// Every worker gone while items are due: the signal.
	stopMailer()
	stopEvil()
	waitWorkers(t, f.q, "none left", func(ws []redisq.WorkerInfo) bool { return len(ws) == 0 })
	r = dqctl(t, "", append(a, "workers", "orders")...)
	r.want(t, exitOK)
	if !regexp.MustCompile(`\nNO LIVE WORKER: 13 items due, oldest overdue \S+, and no live worker\n`).MatchString(r.stdout) {
		t.Errorf("no live worker while items are due:\n%s", r.stdout)
	}
	dqctl(t, "", append(a, "workers", "orders", "-json")...).want(t, exitOK, `"due": 13,`, `"workers": []`)
	if err := f.q.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	dqctl(t, "", append(a, "workers", "orders")...).want(t, exitOK, "  PAUSED: workers take nothing until the queue is resumed", "NO LIVE WORKER: 13 items due")
	dqctl(t, "", append(a, "workers", "nosuch")...).want(t, exitNotFound, `no queue named "nosuch"`)
}

// TestWorkersMoreLeases: the leases a heartbeat had no room for (16 KiB of
// ids) are counted.
func TestWorkersMoreLeases(t *testing.T) {
	f := newFixture(t, "orders")
	var items []redisq.EnqueueItem
	for i := range 5 {
		items = append(items, redisq.EnqueueItem{ID: fmt.Sprintf("%d%s", i, strings.Repeat("x", 5000))})
	}
	enqueueAll(t, f.q, items)
	startWorker(t, f.q, "big", 5)
	waitWorkers(t, f.q, "big runs 5", func(ws []redisq.WorkerInfo) bool { return running(ws)["big"] == 5 })
	for _, full := range []string{"-full=false", "-full"} {
		r := dqctl(t, "", "-redis", f.addr, "workers", "orders", full)
		r.want(t, exitOK, "5/5", "  and 2 more (its heartbeat had no room for them)\n")
		if n := strings.Count(r.stdout, strings.Repeat("x", 5000)); n != 3 {
			t.Errorf("%s: %d leases listed, want 3", full, n)
		}
	}
}

// TestPartitionedWorkers: a partitioned queue's workers are every
// partition's, each with its partition.
func TestPartitionedWorkers(t *testing.T) {
	f := newPartFixture(t)
	ctx := context.Background()
	q := f.p.Partition(1)
	// Due a minute ago: due when workers reads the stats (an item due
	// "now" is due at the next ms of Redis TIME, which the read may
	// precede).
	if err := q.Enqueue(ctx, "now", nil, time.Now().Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	a := []string{"-redis", f.addr}
	dqctl(t, "", append(a, "workers", "orders")...).want(t, exitOK, `queue "orders" (3 partitions) on `, "NO LIVE WORKER: 1 item due")
	startWorker(t, q, "p1", 2)
	waitWorkers(t, f.p, "p1 runs 1", func(ws []redisq.WorkerInfo) bool { return running(ws)["p1"] == 1 })
	r := dqctl(t, "", append(a, "workers", "orders")...)
	r.want(t, exitOK, "NAME  PARTITION  HOST", fmt.Sprintf(`, worker `), fmt.Sprintf(` on %q) runs:`, q.Name()), "1 live worker: 1 of 2 handlers running")
	if !regexp.MustCompile(`(?m)^p1 +1 +\S+ +\d+ .* 1/2 +\d+$`).MatchString(r.stdout) {
		t.Errorf("the worker's row lacks its partition:\n%s", r.stdout)
	}
	r = dqctl(t, "", append(a, "workers", "orders", "-json")...)
	r.want(t, exitOK, `"partition": 1`, fmt.Sprintf(`"queue": %q`, q.Name()))
	// A partition is an ordinary queue.
	dqctl(t, "", append(a, "workers", q.Name())...).want(t, exitOK, "1 live worker")
	dqctl(t, "", append(a, "workers", f.p.Partition(0).Name())...).want(t, exitOK, "no live worker")
}
