package main

import (
	"context"
	"strings"
	"testing"

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
