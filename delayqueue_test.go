package delayqueue_test

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	dq "github.com/dq-go/delayqueue"
)

// Constructing a queue: New's options, and what a Queue that New did not
// make does.

// requirePanicNew fails unless f panics with a "delayqueue:" message that
// says to use New.
func requirePanicNew(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		msg, _ := r.(string)
		if !strings.HasPrefix(msg, "delayqueue:") || !strings.Contains(msg, "New") {
			t.Errorf("%s on a zero Queue: panic %v, want a delayqueue: message naming New", what, r)
		}
	}()
	f()
}

// Regression: a zero-value Queue took Offer and Poll (misplacing every
// deadline) and crashed with a nil dereference in Take. Every method now
// fails fast with a message saying to use New.
func TestZeroQueueFailsFast(t *testing.T) {
	ctx := context.Background()
	calls := map[string]func(q *dq.Queue[int]){
		"Offer":        func(q *dq.Queue[int]) { q.Offer(1, time.Now()) },
		"OfferAfter":   func(q *dq.Queue[int]) { q.OfferAfter(1, time.Second) },
		"Put":          func(q *dq.Queue[int]) { q.Put(ctx, 1, time.Now()) },
		"Take":         func(q *dq.Queue[int]) { q.Take(ctx) },
		"TakeBatch":    func(q *dq.Queue[int]) { q.TakeBatch(ctx, nil, 1) },
		"Consume":      func(q *dq.Queue[int]) { q.Consume(ctx) },
		"Poll":         func(q *dq.Queue[int]) { q.Poll() },
		"DrainExpired": func(q *dq.Queue[int]) { q.DrainExpired(nil, 0) },
		"Peek":         func(q *dq.Queue[int]) { q.Peek() },
		"Remove":       func(q *dq.Queue[int]) { q.Remove(dq.Handle{}) },
		"Reschedule":   func(q *dq.Queue[int]) { q.Reschedule(dq.Handle{}, time.Now()) },
		"Deadline":     func(q *dq.Queue[int]) { q.Deadline(dq.Handle{}) },
		"Len":          func(q *dq.Queue[int]) { q.Len() },
		"Stats":        func(q *dq.Queue[int]) { q.Stats() },
		"Close":        func(q *dq.Queue[int]) { q.Close() },
		"Drain":        func(q *dq.Queue[int]) { q.Drain() },
		"DrainEntries": func(q *dq.Queue[int]) { q.DrainEntries() },
		"Snapshot":     func(q *dq.Queue[int]) { q.Snapshot() },
		"Shutdown":     func(q *dq.Queue[int]) { q.Shutdown(ctx) },
	}
	for name, call := range calls {
		requirePanicNew(t, name, func() { call(new(dq.Queue[int])) })
	}
}

// Regression: New[int](nil) crashed with a nil dereference. A nil Option,
// as a conditionally built option list may hold, is ignored.
func TestNewIgnoresNilOption(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := dq.New[int](nil, dq.WithCapacity(1), nil)
		defer q.Close()
		if _, err := q.OfferAfter(1, time.Second); err != nil {
			t.Fatal(err)
		}
		if _, err := q.OfferAfter(2, time.Second); err != dq.ErrFull {
			t.Fatalf("second Offer = %v, want ErrFull: the options around nil were lost", err)
		}
		if v, err := q.Take(t.Context()); err != nil || v != 1 {
			t.Fatalf("Take = %d, %v; want 1, nil", v, err)
		}
	})
}

// Peek of a zero-time or year-9999 deadline shows the documented clamp: a
// plain date (no monotonic reading) about 292 years from the queue's
// creation on the right side; the far-past item is still due at once, the
// far-future one never.
//
// It runs outside synctest: inside a bubble time.Now has no monotonic
// reading to lose. Nothing in it waits.
func TestPeekOfClampedDeadlines(t *testing.T) {
	{
		q := dq.New[string]()
		defer q.Close()
		created := time.Now()
		const span = 292 * 365 * 24 * time.Hour
		far := time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)
		if _, err := q.Offer("future", far); err != nil {
			t.Fatal(err)
		}
		v, at, ok := q.Peek()
		if !ok || v != "future" {
			t.Fatalf("Peek = %q, %v", v, ok)
		}
		if strings.Contains(at.String(), "m=") {
			t.Errorf("clamped far-future deadline prints with a monotonic reading: %v", at)
		}
		if at.Sub(created) < span || !at.Before(far) {
			t.Errorf("far-future deadline clamped to %v, want ~292 years after %v", at, created)
		}
		if _, err := q.Offer("past", time.Time{}); err != nil {
			t.Fatal(err)
		}
		v, at, _ = q.Peek()
		if v != "past" || strings.Contains(at.String(), "m=") {
			t.Errorf("Peek = %q at %v: want the zero-time item, with no monotonic reading", v, at)
		}
		if created.Sub(at) < span || !at.After(time.Time{}) {
			t.Errorf("zero deadline clamped to %v, want ~292 years before %v", at, created)
		}
		if v, ok := q.Poll(); !ok || v != "past" {
			t.Errorf("Poll = %q, %v; the zero-time item is due at once", v, ok)
		}
		if _, ok := q.Poll(); ok {
			t.Error("the year-9999 item is due")
		}
	}
}
