package main

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dq-go/delayqueue/redisq"
)

// TestLatenessQuantiles (issue 41, item 14): stats gave each quantile as
// the upper bound of its bucket ("p50 <= 250ms"), too coarse to read.
// Now it gives the bucket's range with an estimate interpolated within
// it, the exact value where a bucket holds one (Redis TIME is in whole
// ms), and the max as its bucket.
func TestLatenessQuantiles(t *testing.T) {
	bounds := redisq.LatenessBounds() // 0, 1, 2, 5, 10, 25, ... 1h
	hist := func(counts map[int]int64) redisq.Lateness {
		l := redisq.Lateness{Bounds: bounds, Counts: make([]int64, len(bounds)+1)}
		for i, c := range counts {
			l.Counts[i] = c
		}
		return l
	}
	for _, c := range []struct {
		name string
		l    redisq.Lateness
		q    float64
		est  bool
		want string
	}{
		// 10 in (2ms, 5ms], 90 in (100ms, 250ms]: the median is the 50th,
		// 40 of 90 into its bucket.
		{"interpolated", hist(map[int]int64{3: 10, 8: 90}), 0.5, true, "~167ms (100ms-250ms)"},
		{"first of a bucket", hist(map[int]int64{3: 10, 8: 90}), 0.01, true, "~2ms (2ms-5ms)"},
		{"max", hist(map[int]int64{3: 10, 8: 90}), 1, false, "100ms-250ms"},
		{"on time", hist(map[int]int64{0: 5}), 0.99, true, "0s"},
		{"one value wide", hist(map[int]int64{1: 3, 2: 1}), 0.9, true, "2ms"},
		{"above the last bound", hist(map[int]int64{3: 1, len(bounds): 9}), 0.5, true, "> 1h0m0s"},
		{"empty", hist(nil), 0.5, true, "-"},
		{"negative counts", hist(map[int]int64{2: -7, 4: 2}), 0.5, true, "~8ms (5ms-10ms)"},
	} {
		if got := quantileCell(c.l, c.q, c.est); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	// stats prints them so, from the histogram in Redis: 10 deliveries
	// late by 3 to 5ms, 90 by 101 to 250ms.
	f := newFixture(t, "orders")
	if err := f.c.HSet(context.Background(), "{dq:orders}:late", "inf", 0, "5", 10, "250", 90, "sum", 15000).Err(); err != nil {
		t.Fatal(err)
	}
	r := dqctl(t, "", "-redis", f.addr, "stats", "orders")
	r.want(t, exitOK, "lateness of 100 deliveries", "mean 150ms", "p50 ~167ms (100ms-250ms)", "p99 ~248ms (100ms-250ms)",
		"max 100ms-250ms", "(a histogram: ~ is interpolated within the bucket shown)")
	if strings.Contains(r.stdout, "<=") {
		t.Errorf("a bound given for a quantile:\n%s", r.stdout)
	}
}

// TestSnoozed: stats counts the leases handlers gave back with Snooze
// (and the skipped occurrences) with the other counters, and queues
// leaves them out of FAILED: a snooze is "not now", no failure.
func TestSnoozed(t *testing.T) {
	f := newFixture(t, "orders")
	ctx := context.Background()
	naps, err := redisq.New(ctx, f.c, "naps")
	if err != nil {
		t.Fatal(err)
	}
	defer naps.Close()
	for i := range 4 {
		if err := naps.Enqueue(ctx, fmt.Sprint("n", i), nil, time.Unix(1, 0)); err != nil {
			t.Fatal(err)
		}
	}
	ms, err := naps.TakeBatch(ctx, 4)
	if err != nil || len(ms) != 4 {
		t.Fatalf("took %d, %v", len(ms), err)
	}
	// 4 deliveries: 1 acked, 2 snoozed, 1 nacked: 1 of the 2 that were
	// not snoozes failed.
	if err := ms[0].Ack(ctx); err != nil {
		t.Fatal(err)
	}
	for _, m := range ms[1:3] {
		if _, err := m.Snooze(ctx, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	if err := ms[3].Nack(ctx); err != nil {
		t.Fatal(err)
	}
	a := []string{"-redis", f.addr}
	dqctl(t, "", append(a, "stats", "naps")...).want(t, exitOK, "skipped 0, snoozed 2\n")
	dqctl(t, "", append(a, "stats", "-json", "naps")...).want(t, exitOK, `"snoozed": 2`)
	r := dqctl(t, "", append(a, "queues")...)
	r.want(t, exitOK)
	if !regexp.MustCompile(`(?m)^naps +3 .* 1 +0 +50\.0%$`).MatchString(r.stdout) {
		t.Errorf("the row of naps: want FAILED 50.0%% (1 of the 2 deliveries not snoozed)\n%s", r.stdout)
	}
	dqctl(t, "", append(a, "queues", "-json")...).want(t, exitOK, `"snoozed": 2`)
}
