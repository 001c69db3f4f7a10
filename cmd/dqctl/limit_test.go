package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dq-go/delayqueue/redisq"
)

// TestRateLimits: rate-limit sets a key's limit and none removes it;
// limits shows its use (claims in the window, items waiting, when there is
// room) and show says why an item waits. Keys are escaped.
func TestRateLimits(t *testing.T) {
	f := newFixture(t, "orders")
	ctx := context.Background()
	key := "tenant\x1b[2J\u202e"
	a := []string{"-redis", f.addr}
	r := dqctl(t, "", append(a, "rate-limit", "orders", "--", key, "1/1h")...)
	r.want(t, exitOK, `limit key "tenant\x1b[2J\u202e" of queue "orders": rate limit 1 per 1h0m0s (claims`)
	for i := range 3 {
		if _, err := f.q.Add(ctx, redisq.EnqueueItem{ID: fmt.Sprintf("r%d", i), Job: redisq.Job{LimitKey: key}}); err != nil {
			t.Fatal(err)
		}
	}
	m, err := f.q.Take(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	if m2, err := f.q.Take(tctx); err == nil {
		t.Fatalf("took %s over the limit", m2.ID)
	}
	cancel()
	r = dqctl(t, "", append(a, "limits", "orders")...)
	r.want(t, exitOK, "KEY", "LIMIT", "WAITING", `"tenant\x1b[2J\u202e"`, "1 per 1h0m0s", "1/1", "in 1h0m0s", "  2  ")
	if strings.ContainsAny(r.stdout, "\x1b\u202e") {
		t.Errorf("raw control characters printed: %q", r.stdout)
	}
	r = dqctl(t, "", append(a, "show", "orders", "r1")...)
	r.want(t, exitOK, "waits", "for a slot of its limit key's rate limit, until ", `limit key`, `"tenant\x1b[2J\u202e"`)
	r = dqctl(t, "", append(a, "run-now", "orders", "r1")...)
	r.want(t, exitOK, `"r1" is due and waits for its rate slot (in 1h0m0s`, "left in its place; the limit holds")
	r = dqctl(t, "", append(a, "limits", "orders", "nope")...)
	r.want(t, exitNotFound, `limit key "nope" of queue "orders" has no rate or concurrency limit`)
	r = dqctl(t, "", append(a, "rate-limit", "orders", "k", "5")...)
	r.want(t, exitUsage, `bad rate "5": want N/PER`)

	r = dqctl(t, "", append(a, "rate-limit", "orders", "--", key, "none")...)
	r.want(t, exitOK, "no rate limit; its waiting items are due now")
	ms, err := f.q.TakeBatch(ctx, 10)
	if err != nil || len(ms) != 2 {
		t.Fatalf("after none: %d items, %v", len(ms), err)
	}
	r = dqctl(t, "", append(a, "limits", "orders")...)
	r.want(t, exitOK, `queue "orders" has no rate or concurrency limit`)
	if err := m.Ack(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestConcurrencyLimits: concurrency-limit sets a key's limit and none
// removes it; limits shows the items leased and waiting, and show says an
// item waits for a place.
func TestConcurrencyLimits(t *testing.T) {
	f := newFixture(t, "orders")
	ctx := context.Background()
	a := []string{"-redis", f.addr}
	r := dqctl(t, "", append(a, "concurrency-limit", "orders", "acct", "1")...)
	r.want(t, exitOK, `limit key "acct" of queue "orders": at most 1 leased at once`)
	r = dqctl(t, "", append(a, "concurrency-limit", "orders", "acct", "0")...)
	r.want(t, exitUsage, `bad concurrency "0": want K`)
	for i := range 3 {
		if _, err := f.q.Add(ctx, redisq.EnqueueItem{ID: fmt.Sprintf("c%d", i), At: time.Unix(1, 0), Job: redisq.Job{LimitKey: "acct"}}); err != nil {
			t.Fatal(err)
		}
	}
	// Claim what is due (the fixture's overdue items too): c0 is leased,
	// c1 and c2 wait.
	var held []*redisq.Message
	for {
		tctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		ms, err := f.q.TakeBatch(tctx, 100)
		cancel()
		if err != nil {
			break
		}
		held = append(held, ms...)
	}
	r = dqctl(t, "", append(a, "limits", "orders", "acct")...)
	r.want(t, exitOK, "KEY", "CONCURRENCY", "TAKEN", "GIVEN", `"acct"`, "1/1", "  2")
	r = dqctl(t, "", append(a, "show", "orders", "c1")...)
	r.want(t, exitOK, "waits", "for a place under its limit key's concurrency limit")
	r = dqctl(t, "", append(a, "run-now", "orders", "c1")...)
	r.want(t, exitOK, `"c1" is due and waits for a place under its concurrency limit: left in its place`)
	r = dqctl(t, "", append(a, "concurrency-limit", "orders", "acct", "none")...)
	r.want(t, exitOK, "no concurrency limit; its waiting items are due now")
	ms, err := f.q.TakeBatch(ctx, 10)
	if err != nil || len(ms) != 2 {
		t.Fatalf("after none: %d items, %v", len(ms), err)
	}
	r = dqctl(t, "", append(a, "limits", "orders")...)
	r.want(t, exitOK, `queue "orders" has no rate or concurrency limit`)
	for _, m := range append(held, ms...) {
		if err := m.Ack(ctx); err != nil {
			t.Fatal(err)
		}
	}
}
