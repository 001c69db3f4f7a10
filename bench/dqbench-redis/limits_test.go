package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/dq-go/delayqueue/bench/internal/report"
	"github.com/dq-go/delayqueue/redisq/redistest"
	"github.com/redis/go-redis/v9"
)

// A short -mode limits run of the Worker beside asynq: every row handles
// every item once, the rate-limited rows never start more than the limit
// in any second (redisq's by Redis TIME), the concurrency rows never hold
// two items of a key at once and the runs of one key wait for their
// place, the table prints its rows and ratios, and no key is left behind.
func TestLimitsMode(t *testing.T) {
	srv := redistest.New(t)
	// 200 items at 200/s, a limit of 100/s; each item held 10ms, so that
	// the items of a run of 8 (5ms apart) come due while the key's place
	// is taken.
	rep, stdout := runJSON(t, "-mode", "limits", "-impl", "worker,asynq", "-redis", srv.Addr,
		"-rate", "200", "-duration", "1s", "-limit-rate", "100", "-hold", "10ms", "-asynq-check", "1s",
		"-quiet", "-hist=false")
	by := map[string]report.Result{}
	for _, r := range rep.Results {
		by[r.Name] = r
	}
	rows := []string{"worker/unlimited", "asynq/unlimited", "worker/rate", "asynq/rate", "worker/conc", "worker/conc-runs"}
	for _, name := range rows {
		r, ok := by[name]
		if !ok {
			t.Fatalf("no result %q in %+v", name, rep.Results)
		}
		if r.Mode != "limits" || r.Items != 200 || r.Delivered != 200 || r.Duplicates != 0 || r.Early != 0 {
			t.Errorf("%s: mode %q, items %d, delivered %d, duplicates %d, early %d; want limits, 200, 200, 0, 0",
				name, r.Mode, r.Items, r.Delivered, r.Duplicates, r.Early)
		}
		if r.ServerCmdsPerItem <= 0 || r.ServerCPUPerItemNs <= 0 || r.StartRate <= 0 {
			t.Errorf("%s: server commands %v, CPU %v, starts/s %v per item; want all > 0", name, r.ServerCmdsPerItem, r.ServerCPUPerItemNs, r.StartRate)
		}
	}
	if len(rep.Results) != len(rows) {
		t.Errorf("%d results, want %d: %+v", len(rep.Results), len(rows), rep.Results)
	}
	if _, ok := by["asynq/conc"]; ok {
		t.Errorf("an asynq row for a concurrency limit, which asynq lacks")
	}
	// The rate-limited row: never above its limit in any second, at about
	// the limit after the first second, most items having waited.
	r := by["worker/rate"]
	if r.LimitN != 100 || r.MaxPerWindow <= 0 || r.MaxPerWindow > r.LimitN {
		t.Errorf("worker/rate: at most %d starts in a second under a limit of %d; want 1 to 100", r.MaxPerWindow, r.LimitN)
	}
	if r.StartRate > 1.1*float64(r.LimitN) || r.Waited < 50 {
		t.Errorf("worker/rate: %v starts/s, %d items waited; want at most 110/s and at least 50", r.StartRate, r.Waited)
	}
	for _, name := range []string{"worker/conc", "worker/conc-runs"} {
		if r := by[name]; r.MaxPerKey != 1 {
			t.Errorf("%s: at most %d items of one key held at once, want 1", name, r.MaxPerKey)
		}
	}
	if r := by["worker/conc-runs"]; r.Waited == 0 {
		t.Errorf("worker/conc-runs: no item waited for a place")
	}
	if r := by["asynq/rate"]; r.Attempts < 1 {
		t.Errorf("asynq/rate: %v handler calls per task, want >= 1", r.Attempts)
	}
	for _, want := range []string{"server CPU/item", "/ redisq unlimited", "worker/rate ", "worker/conc-runs ",
		"asynq has no per-key concurrency limit", "target (flow-control issue): limited rows within 1.5x the server CPU per item of the unlimited row of the same consumers: worker/rate "} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer c.Close()
	if keys, err := c.Keys(context.Background(), "*dqbench-*").Result(); err != nil || len(keys) != 0 {
		t.Errorf("keys left: %v (%v)", keys, err)
	}
}

// -mode limits takes worker, redis and asynq, and a rate limit below -rate.
func TestLimitsFlagsChecked(t *testing.T) {
	for _, tc := range []struct {
		impl      string
		limitRate int
		ok        bool
	}{
		{"worker,asynq", 0, true},
		{"redis,worker", 500, true},
		{"worker-mux", 0, false},
		{"worker", 1000, false},
	} {
		o := &options{impl: tc.impl, mode: "limits", producers: 1, consumers: 4, rate: 1000, duration: 1e9, wakeCap: 1e9,
			limitRate: tc.limitRate, limitKeys: 1000, limitRun: 8}
		if err := o.check(); (err == nil) != tc.ok {
			t.Errorf("-impl %s -limit-rate %d: check = %v", tc.impl, tc.limitRate, err)
		}
	}
}

// -rounds 2: every row runs in each round, the rounds one after the
// other (a row of round 2 never before one of round 1), each on queues of
// its own, and the table gives each row's ratio round by round.
func TestLimitsRounds(t *testing.T) {
	srv := redistest.New(t)
	rep, stdout := runJSON(t, "-mode", "limits", "-impl", "worker", "-redis", srv.Addr,
		"-rate", "200", "-duration", "500ms", "-limit-rate", "100", "-limit-run", "0", "-rounds", "2",
		"-quiet", "-hist=false")
	var got []string
	for _, r := range rep.Results {
		got = append(got, fmt.Sprintf("%s@%d", r.Name, r.Round))
		if r.Delivered != 100 || r.Early != 0 {
			t.Errorf("%s round %d: %d delivered, %d early; want 100 and 0", r.Name, r.Round, r.Delivered, r.Early)
		}
	}
	want := "worker/unlimited@1 worker/rate@1 worker/conc@1 worker/unlimited@2 worker/rate@2 worker/conc@2"
	if strings.Join(got, " ") != want {
		t.Errorf("rows %s, want %s", strings.Join(got, " "), want)
	}
	for _, w := range []string{"/ own unlimited, each round", "2 rounds, every row in turn", "worker/rate median "} {
		if !strings.Contains(stdout, w) {
			t.Errorf("output lacks %q:\n%s", w, stdout)
		}
	}
}

// writeLimits takes each round's ratio to the unlimited row of its round
// and reports the median of those, with the figures of the median round:
// not the ratio of medians, which rows measured in different moods skew.
func TestWriteLimitsMedianOfRounds(t *testing.T) {
	row := func(name string, round int, cpu float64) report.Result {
		return report.Result{Name: name, Mode: "limits", Round: round, Items: 10, Delivered: 10, ServerCPUPerItemNs: cpu, LimitN: 5, MaxPerWindow: round}
	}
	// Ratios by round: 2.00, 1.20, 1.60: median 1.60, of round 3. The
	// ratio of the medians would be 300/200 = 1.50.
	rs := []report.Result{
		row("worker/unlimited", 1, 100), row("worker/rate", 1, 200),
		row("worker/unlimited", 2, 250), row("worker/rate", 2, 300),
		row("worker/unlimited", 3, 200), row("worker/rate", 3, 320),
	}
	var b strings.Builder
	writeLimits(&b, &options{rounds: 3}, rs)
	out := b.String()
	if !strings.Contains(out, "worker/rate median 1.60x of 3 rounds (no)") {
		t.Errorf("verdict is not the median of the rounds' ratios 2.00 1.20 1.60:\n%s", out)
	}
	if !strings.Contains(out, "2.00 1.20 1.60") || !strings.Contains(out, "3 (<= 5)") {
		t.Errorf("the row does not list each round's ratio or show its median round (3):\n%s", out)
	}
}
