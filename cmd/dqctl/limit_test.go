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

// TestQueueRateLimit: queue-rate-limit sets the rate limit of the whole
// queue and none removes it; limits shows it first, with its claims in
// the window and when there is room, beside the keys' limits. A
// partitioned queue has none: its partitions are named.
func TestQueueRateLimit(t *testing.T) {
	f := newFixture(t, "orders")
	ctx := context.Background()
	a := []string{"-redis", f.addr}
	r := dqctl(t, "", append(a, "queue-rate-limit", "orders", "2/1h")...)
	r.want(t, exitOK, `queue "orders": rate limit 2 per 1h0m0s of the whole queue (claims of its items whatever their keys`)
	if s, err := f.q.QueueRateLimit(ctx); err != nil || s.Limit != (redisq.RateLimit{N: 2, Per: time.Hour}) {
		t.Fatalf("the queue's limit: %+v %v", s, err)
	}
	dqctl(t, "", append(a, "limits", "orders")...).want(t, exitOK, "QUEUE RATE LIMIT  USED  ROOM\n2 per 1h0m0s      0/2   now\n")
	// Three items due: two are claimed, the third stays due.
	for i := range 3 {
		if err := f.q.Enqueue(ctx, fmt.Sprint("q", i), nil, time.Unix(1, 0)); err != nil {
			t.Fatal(err)
		}
	}
	if ms, err := f.q.TakeBatch(ctx, 10); err != nil || len(ms) != 2 {
		t.Fatalf("took %d under 2 per 1h, %v", len(ms), err)
	}
	if err := f.q.SetRateLimit(ctx, "smtp", redisq.RateLimit{N: 5, Per: time.Minute}); err != nil {
		t.Fatal(err)
	}
	r = dqctl(t, "", append(a, "limits", "orders")...)
	r.want(t, exitOK)
	if !regexp.MustCompile(`^QUEUE RATE LIMIT +USED +ROOM\n2 per 1h0m0s +2/2 +in (1h0m0s|59m5\ds)\n\nKEY +LIMIT .*\n"smtp" +5 per 1m0s +0/5 +now +0 +-\n$`).MatchString(r.stdout) {
		t.Errorf("limits with the queue's own and a key's:\n%s", r.stdout)
	}
	// A key's lookup shows the key's alone.
	if r := dqctl(t, "", append(a, "limits", "orders", "smtp")...); strings.Contains(r.stdout, "QUEUE RATE LIMIT") {
		t.Errorf("a key's lookup shows the queue's limit:\n%s", r.stdout)
	}
	dqctl(t, "", append(a, "queue-rate-limit", "orders", "5")...).want(t, exitUsage, `bad rate "5": want N/PER`, "usage: dqctl queue-rate-limit QUEUE N/PER|none")
	dqctl(t, "", append(a, "queue-rate-limit", "orders", "1/1h", "x")...).want(t, exitUsage, "wrong number of arguments")
	dqctl(t, "", append(a, "queue-rate-limit", "orders", "none")...).want(t, exitOK, `queue "orders": no rate limit of its own; its due items are claimed`)
	if ms, err := f.q.TakeBatch(ctx, 10); err != nil || len(ms) != 1 {
		t.Fatalf("after none: took %d, %v", len(ms), err)
	}
	if err := f.q.SetRateLimit(ctx, "smtp", redisq.RateLimit{}); err != nil {
		t.Fatal(err)
	}
	dqctl(t, "", append(a, "limits", "orders")...).want(t, exitOK, `queue "orders" has no rate or concurrency limit`)

	p, err := redisq.NewPartitioned(ctx, f.c, "parts", 2)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	dqctl(t, "", append(a, "queue-rate-limit", "parts", "1/1s")...).want(t, exitError, `queue "parts" is partitioned (2 partitions: "parts~`)
}
