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

// TestRunNow (issue 24, items 1 and 15): run-now never delays an item and
// says what it did in words: a scheduled item is made due now, an overdue
// one keeps its place, a dead one is requeued, an in-flight or unknown one
// fails as the other item commands' do (exit 3), and ids are escaped.
func TestRunNow(t *testing.T) {
	f := newFixture(t, "orders")
	ctx := context.Background()
	late := time.Now().Add(-5 * time.Minute).Truncate(time.Millisecond)
	evil := "id\x1b[2J\u202e"
	if err := f.q.Enqueue(ctx, "late", nil, late); err != nil {
		t.Fatal(err)
	}
	if _, err := f.q.EnqueueAfter(ctx, evil, nil, time.Hour); err != nil {
		t.Fatal(err)
	}
	a := []string{"-redis", f.addr}
	r := dqctl(t, "", append(a, "run-now", "orders", "s1", "late", "d1", "--", evil)...)
	r.want(t, exitOK, `made "s1" due now: it runs once the items already due have been taken`+"\n",
		`requeued "d1" (it was dead or completed): due now, attempts reset`+"\n", `made "id\x1b[2J\u202e" due now`)
	if !regexp.MustCompile(`"late" already due \(5m\ds ago, (\d{4}-\d\d-\d\dT)?\d\d:\d\d:\d\dZ\): left in its place, ahead of the items due after it\n`).MatchString(r.stdout) {
		t.Errorf("run-now of an overdue item:\n%s", r.stdout)
	}
	now := time.Now()
	for id, want := range map[string]func(it redisq.Item) bool{
		"s1":   func(it redisq.Item) bool { return it.State == redisq.StateScheduled && !it.Due.After(now) },
		"late": func(it redisq.Item) bool { return it.State == redisq.StateScheduled && it.Due.Equal(late) },
		"d1": func(it redisq.Item) bool {
			return it.State == redisq.StateScheduled && it.Attempts == 0 && !it.Due.After(now)
		},
		evil: func(it redisq.Item) bool { return !it.Due.After(now) },
	} {
		if it, err := f.q.Get(ctx, id); err != nil || !want(it) {
			t.Errorf("%q after run-now: %+v %v", id, it, err)
		}
	}
	// The overdue item is still first: run-now put nothing before it.
	p, err := f.q.List(ctx, redisq.StateScheduled, redisq.ListOptions{Limit: 1})
	if err != nil || len(p.Items) != 1 || p.Items[0].ID != "late" {
		t.Errorf("first due after run-now: %+v %v", p.Items, err)
	}
	if st, err := f.q.Stats(ctx); err != nil || st.Requeued != 1 {
		t.Errorf("the dead item's run-now is not counted as a requeue: %+v %v", st.StatsCounters, err)
	}
	r = dqctl(t, "", append(a, "run-now", "orders", "f1", "zz", "s2")...)
	r.want(t, exitNotFound, `item "f1" is in flight: a consumer holds it (it is running now); nothing changed`, `no item "zz" in queue "orders"`,
		`made "s2" due now`, "2 of 3 items failed")
	if it, err := f.q.Get(ctx, "f1"); err != nil || it.State != redisq.StateInFlight {
		t.Errorf("f1 after run-now: %+v %v", it, err)
	}
	dqctl(t, "", append(a, "run-now", "nosuch", "x")...).want(t, exitNotFound, `no queue named "nosuch"`, "nothing changed")
	dqctl(t, "", append(a, "run-now", "orders")...).want(t, exitUsage, "wrong number of arguments")
	f.audit(t)
}

// TestRunNowRecurring (issue 24, item 1): run-now of a recurring job's next
// occurrence leaves it at its time and enqueues an extra run, due now, and
// says both; recurring then shows the extra run as the last and the
// occurrence as the next, not behind.
func TestRunNowRecurring(t *testing.T) {
	f := newFixture(t, "orders")
	ctx := context.Background()
	if _, err := f.q.Register(ctx, "daily", redisq.EveryPhase(24*time.Hour, 9*time.Hour), []byte("digest")); err != nil {
		t.Fatal(err)
	}
	g, err := f.q.Registration(ctx, "daily")
	if err != nil {
		t.Fatal(err)
	}
	a := []string{"-redis", f.addr}
	r := dqctl(t, "", append(a, "run-now", "orders", g.EnqueuedID)...)
	r.want(t, exitOK, fmt.Sprintf(`%q is the next occurrence of recurring "daily": extra run "rec:daily@`, g.EnqueuedID),
		fmt.Sprintf(`enqueued, due now; the scheduled run at %s (in `, stamp(g.Enqueued)), ") stays\n")
	extra := regexp.MustCompile(`extra run "([^"]+)"`).FindStringSubmatch(r.stdout)[1]
	if it, err := f.q.Get(ctx, extra); err != nil || it.State != redisq.StateScheduled || string(it.Payload) != "digest" || it.Due.After(time.Now().Add(time.Second)) {
		t.Errorf("the extra run %q: %+v %v", extra, it, err)
	}
	if it, err := f.q.Get(ctx, g.EnqueuedID); err != nil || !it.Due.Equal(g.Enqueued) {
		t.Errorf("the scheduled occurrence moved: %+v %v", it, err)
	}
	r = dqctl(t, "", append(a, "recurring", "orders")...)
	r.want(t, exitOK)
	row := ""
	for _, l := range strings.Split(r.stdout, "\n") {
		if strings.HasPrefix(l, "daily ") {
			row = l
		}
	}
	if !regexp.MustCompile(`^daily +"every 24h0m0s, phase 9h0m0s" +in \S+ \(\S+Z\) +\S+ ago \(\d\d:\d\d:\d\dZ\) `).MatchString(row) || strings.Contains(r.stdout, "behind") {
		t.Errorf("recurring after run-now: NEXT the scheduled run, LAST the extra run, not behind:\n%s", r.stdout)
	}
}

// TestPartitionedRunNow: run-now acts on the partition that holds the id
// (k1's is its ordering key's) and says which.
func TestPartitionedRunNow(t *testing.T) {
	f := newPartFixture(t)
	ctx := context.Background()
	a := []string{"-redis", f.addr}
	dqctl(t, "", append(a, "run-now", "orders", "k1", "d0")...).want(t, exitOK,
		fmt.Sprintf(`made "k1" in partition %d %q due now`, f.kp, f.p.Partition(f.kp).Name()),
		fmt.Sprintf(`requeued "d0" in partition %d`, f.p.PartitionOf("d0")))
	if it, err := f.p.Partition(f.kp).Get(ctx, "k1"); err != nil || it.Due.After(time.Now()) {
		t.Errorf("k1 after run-now: %+v %v", it, err)
	}
	dqctl(t, "", append(a, "run-now", "orders", "nosuch")...).want(t, exitNotFound, `no item "nosuch" in queue "orders"`)
}
