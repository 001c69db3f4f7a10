package main

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dq-go/delayqueue/redisq"
)

// sickQueues adds to the fixture (whose "orders" has 2 dead items and 2
// of 3 deliveries failed) a queue "wait" with 1,234 items due for 5
// minutes, never delivered, and a queue "calm" with one item due in an
// hour.
func (f *fixture) sickQueues(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	wait, err := redisq.New(ctx, f.c, "wait")
	if err != nil {
		t.Fatal(err)
	}
	defer wait.Close()
	var items []redisq.EnqueueItem
	for i := range 1234 {
		items = append(items, redisq.EnqueueItem{ID: fmt.Sprint("b", i), At: time.Now().Add(-5 * time.Minute)})
	}
	enqueueAll(t, wait, items)
	calm, err := redisq.New(ctx, f.c, "calm")
	if err != nil {
		t.Fatal(err)
	}
	defer calm.Close()
	if _, err := calm.EnqueueAfter(ctx, "c", nil, time.Hour); err != nil {
		t.Fatal(err)
	}
}

// enqueueAll enqueues items in q, every one or fails the test.
func enqueueAll(t *testing.T, q *redisq.Queue, items []redisq.EnqueueItem) {
	t.Helper()
	res, err := q.EnqueueMany(context.Background(), items)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
}

// firstColumn is the first cell of each table row after the header.
func firstColumn(out string) []string {
	var names []string
	for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n")[1:] {
		name, _, _ := strings.Cut(l, " ")
		names = append(names, name)
	}
	return names
}

// TestQueuesSickFirst (issue 24, item 15): queues shows how long the
// oldest due item has waited and the failed deliveries of each queue, and
// -sort puts the sick queue first: "wait" by overdue and due, "orders"
// by dead and failed; counts have thousands separators, -json plain
// numbers.
func TestQueuesSickFirst(t *testing.T) {
	f := newFixture(t, "orders")
	f.sickQueues(t)
	a := []string{"-redis", f.addr}
	r := dqctl(t, "", append(a, "queues")...)
	r.want(t, exitOK, "QUEUE   SCHEDULED  DUE    OLDEST OVERDUE  INFLIGHT  DEAD  COMPLETED  NACKED  DEAD-LETTERED  FAILED\n")
	if got := fmt.Sprint(firstColumn(r.stdout)); got != "[calm orders wait]" {
		t.Errorf("by name: %s\n%s", got, r.stdout)
	}
	for name, want := range map[string]string{
		"wait":   `^wait +1,234 +1,234 +5m\ds +0 +0 +0 +0 +0 +-$`,
		"calm":   `^calm +1 +0 +- +0 +0 +0 +0 +0 +-$`,
		"orders": `^orders +2 +0 +- +1 +2 +0 +1 +2 +66\.7%$`,
	} {
		if !regexp.MustCompile(`(?m)` + want).MatchString(r.stdout) {
			t.Errorf("row of %s: want %s\n%s", name, want, r.stdout)
		}
	}
	for sort, want := range map[string]string{"name": "[calm orders wait]", "overdue": "[wait calm orders]", "due": "[wait calm orders]",
		"dead": "[orders calm wait]", "failed": "[orders calm wait]", "errors": "[orders calm wait]", "inflight": "[orders calm wait]"} {
		r := dqctl(t, "", append(a, "queues", "-sort", sort)...)
		r.want(t, exitOK)
		if got := fmt.Sprint(firstColumn(r.stdout)); got != want {
			t.Errorf("-sort %s: %s, want %s\n%s", sort, got, want, r.stdout)
		}
	}
	dqctl(t, "", append(a, "queues", "-sort", "size")...).want(t, exitUsage, `unknown -sort "size": want name, overdue, due, inflight, dead, failed (errors)`)

	var rows []struct {
		Name                 string    `json:"name"`
		Due                  int64     `json:"due"`
		OldestOverdueSeconds float64   `json:"oldest_overdue_seconds"`
		PausedSince          time.Time `json:"paused_since"`
		Delivered            int64     `json:"delivered"`
		Acked                int64     `json:"acked"`
		Nacked               int64     `json:"nacked"`
		DeadLettered         int64     `json:"dead_lettered"`
	}
	r = dqctl(t, "", append(a, "queues", "-json", "-sort", "overdue")...)
	r.want(t, exitOK, `"due": 1234,`)
	if strings.Contains(r.stdout, "1,234") || strings.Contains(r.stdout, "paused_since") {
		t.Errorf("-json with separators, or a paused_since of a queue not paused:\n%s", r.stdout)
	}
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil || len(rows) != 3 {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	if b, o := rows[0], rows[2]; b.Name != "wait" || b.Due != 1234 || b.OldestOverdueSeconds < 299 || b.OldestOverdueSeconds > 400 ||
		o.Name != "orders" || o.Delivered != 3 || o.Acked != 0 || o.Nacked != 1 || o.DeadLettered != 2 {
		t.Errorf("queues -json: %+v", rows)
	}

	// A paused queue says since when, relative and absolute.
	wait, err := redisq.New(context.Background(), f.c, "wait")
	if err != nil {
		t.Fatal(err)
	}
	defer wait.Close()
	before := time.Now().Add(-time.Second)
	if err := wait.Pause(context.Background()); err != nil {
		t.Fatal(err)
	}
	r = dqctl(t, "", append(a, "queues")...)
	r.want(t, exitOK, "FAILED  PAUSED\n")
	m := regexp.MustCompile(`(?m)^wait .* paused (?:\S+ ago|now) \(((\d{4}-\d\d-\d\dT)?\d\d:\d\d:\d\dZ)\)$`).FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("the paused queue does not say since when:\n%s", r.stdout)
	}
	// Without a date it is today's (UTC): before's, or now's past midnight.
	ok := false
	for _, day := range []time.Time{before, time.Now()} {
		s := m[1]
		if m[2] == "" {
			s = day.UTC().Format("2006-01-02T") + s
		}
		at, err := time.Parse(time.RFC3339, s)
		ok = ok || err == nil && !at.Before(before.Truncate(time.Second)) && !at.After(time.Now())
	}
	if !ok {
		t.Errorf("paused at %q, paused after %v", m[1], before)
	}
	r = dqctl(t, "", append(a, "queues", "-json")...)
	r.want(t, exitOK, `"paused_since": "`)
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil || rows[2].PausedSince.Before(before) || rows[2].PausedSince.After(time.Now()) {
		t.Errorf("paused_since %v (%v), paused after %v", rows[2].PausedSince, err, before)
	}
}

// TestStatsPausedSinceAndSeparators (issue 24, item 15): stats says since
// when a queue is paused, absolute and relative, and prints counts with
// thousands separators; -json has plain numbers and paused_since.
func TestStatsPausedSinceAndSeparators(t *testing.T) {
	f := newFixture(t, "orders")
	ctx := context.Background()
	var items []redisq.EnqueueItem
	for i := range 1234 {
		items = append(items, redisq.EnqueueItem{ID: fmt.Sprint("later", i), After: time.Hour})
	}
	enqueueAll(t, f.q, items)
	a := []string{"-redis", f.addr}
	r := dqctl(t, "", append(a, "stats", "orders")...)
	r.want(t, exitOK, "scheduled 1,236 (due now 0", "counters: enqueued 1,239, delivered 3,")
	if strings.Contains(r.stdout, "PAUSED") || strings.Contains(r.stdout, "paused") {
		t.Errorf("a queue not paused is said paused:\n%s", r.stdout)
	}
	r = dqctl(t, "", append(a, "stats", "orders", "-json")...)
	r.want(t, exitOK, `"scheduled": 1236,`, `"enqueued": 1239,`)
	if strings.Contains(r.stdout, "paused_since") {
		t.Errorf("-json has paused_since of a queue not paused:\n%s", r.stdout)
	}

	before := time.Now().Add(-time.Second)
	if err := f.q.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range [][]string{{"stats", "orders"}, {"watch", "orders", "-n", "1"}} {
		r = dqctl(t, "", append(a, cmd...)...)
		r.want(t, exitOK, "  PAUSED: no item is delivered until the queue is resumed (dqctl resume)\n")
		if !regexp.MustCompile(`\n  paused since \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} UTC \((?:\S+ ago|now)\)\n`).MatchString(r.stdout) {
			t.Errorf("%v does not say since when:\n%s", cmd, r.stdout)
		}
		for _, l := range strings.Split(r.stdout, "\n") {
			if len(l) > statsWidth {
				t.Errorf("%v: a line of %d columns: %q", cmd, len(l), l)
			}
		}
	}
	var st struct {
		PausedSince time.Time `json:"paused_since"`
	}
	r = dqctl(t, "", append(a, "stats", "orders", "-json")...)
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || st.PausedSince.Before(before) || st.PausedSince.After(time.Now()) {
		t.Errorf("paused_since %v (%v), paused after %v\n%s", st.PausedSince, err, before, r.stdout)
	}
}

// TestPartitionedStatsPaused: a partitioned queue's stats name the paused
// partitions with since when; once every one is, the queue says since
// when (the last pause).
func TestPartitionedStatsPaused(t *testing.T) {
	f := newPartFixture(t)
	ctx := context.Background()
	a := []string{"-redis", f.addr}
	if err := f.p.Partition(1).Pause(ctx); err != nil {
		t.Fatal(err)
	}
	r := dqctl(t, "", append(a, "stats", "orders")...)
	r.want(t, exitOK, "  PAUSED: 1 of 3 partitions deliver nothing until resumed (dqctl resume)\n", "PAUSED\n")
	if !regexp.MustCompile(`(?m)^  1 +`+regexp.QuoteMeta(f.p.Partition(1).Name())+` .* paused (?:\S+ ago|now) \(\S+Z\)$`).MatchString(r.stdout) ||
		strings.Contains(r.stdout, "paused since") {
		t.Errorf("partition 1's row does not say since when it is paused, or the queue is said paused:\n%s", r.stdout)
	}
	if err := f.p.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	dqctl(t, "", append(a, "stats", "orders")...).want(t, exitOK, "  PAUSED: no item is delivered", "\n  paused since ")
}
