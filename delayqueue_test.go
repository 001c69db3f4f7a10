package delayqueue_test

import (
	"context"
	"errors"
	"iter"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	dq "github.com/dq-go/delayqueue"
)

// The Queue API's own contract: its public surface (pinned at compile
// time), construction (New's options, and what a Queue that New did not
// make does), and one end-to-end walk through every method. The behaviour
// of each part is tested in depth in the files named after it (take_test,
// put_test, ordering_test, leader_test, shutdown_test, ...).

// queueAPI is the public method set of Queue: a change to any signature
// fails to compile here, so an API change is a decision, not an accident.
type queueAPI[T any] interface {
	Offer(v T, at time.Time) (dq.Handle, error)
	OfferAfter(v T, d time.Duration) (dq.Handle, error)
	Put(ctx context.Context, v T, at time.Time) (dq.Handle, error)
	Take(ctx context.Context) (T, error)
	TakeBatch(ctx context.Context, dst []T, max int) ([]T, error)
	Poll() (T, bool)
	DrainExpired(dst []T, max int) []T
	Peek() (v T, at time.Time, ok bool)
	Remove(h dq.Handle) (T, bool)
	Reschedule(h dq.Handle, at time.Time) bool
	Deadline(h dq.Handle) (time.Time, bool)
	Len() int
	Stats() dq.Stats
	Consume(ctx context.Context) iter.Seq[T]
	Snapshot() []dq.Entry[T]
	Drain() []T
	DrainEntries() []dq.Entry[T]
	Shutdown(ctx context.Context) ([]dq.Entry[T], error)
	Close()
}

var (
	_ queueAPI[string]                  = (*dq.Queue[string])(nil)
	_ func(...dq.Option) *dq.Queue[int] = dq.New[int]
	_ func(int) dq.Option               = dq.WithCapacity
	_ func() dq.Option                  = dq.WithPreciseTimer
)

// Every method, in the order a program uses them, on one queue: what each
// returns and what it leaves behind, checked against the counters of Stats
// (Offered == Taken + Removed + Drained + Len).
func TestQueueEndToEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		q := dq.New[string](dq.WithCapacity(8))
		start := time.Now()
		at := func(d time.Duration) time.Time { return start.Add(d) }
		must := func(h dq.Handle, err error) dq.Handle {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
			return h
		}
		hA := must(q.Offer("a", at(3*time.Second)))
		must(q.OfferAfter("b", time.Second))
		hC := must(q.Put(ctx, "c", at(2*time.Second)))
		hD := must(q.Offer("d", at(time.Hour)))
		must(q.Offer("e", at(-time.Minute))) // past: due at once
		if n := q.Len(); n != 5 {
			t.Fatalf("Len = %d, want 5", n)
		}
		if v, d, ok := q.Peek(); !ok || v != "e" || !d.Equal(at(-time.Minute)) {
			t.Fatalf("Peek = %q %v %v, want e due a minute ago", v, d, ok)
		}
		if d, ok := q.Deadline(hC); !ok || !d.Equal(at(2*time.Second)) {
			t.Fatalf("Deadline(c) = %v %v", d, ok)
		}
		if v, ok := q.Poll(); !ok || v != "e" {
			t.Fatalf("Poll = %q %v, want e", v, ok)
		}
		if _, ok := q.Poll(); ok {
			t.Fatal("Poll handed out an item not yet due")
		}
		if got := q.DrainExpired(nil, 10); len(got) != 0 {
			t.Fatalf("DrainExpired = %q with nothing due", got)
		}
		if v, ok := q.Remove(hD); !ok || v != "d" {
			t.Fatalf("Remove(d) = %q %v", v, ok)
		}
		if _, ok := q.Remove(hD); ok {
			t.Fatal("a second Remove of the same handle succeeded")
		}
		if !q.Reschedule(hA, at(500*time.Millisecond)) { // a goes first now
			t.Fatal("Reschedule(a) failed")
		}
		if v, err := q.Take(ctx); err != nil || v != "a" || time.Since(start) != 500*time.Millisecond {
			t.Fatalf("Take = %q %v after %v, want a after 500ms", v, err, time.Since(start))
		}
		time.Sleep(2*time.Second - 500*time.Millisecond) // b and c due
		got, err := q.TakeBatch(ctx, nil, 10)
		if err != nil || !slices.Equal(got, []string{"b", "c"}) {
			t.Fatalf("TakeBatch = %q %v, want [b c]", got, err)
		}
		if _, ok := q.Deadline(hC); ok {
			t.Fatal("Deadline of an item handed out")
		}

		for _, v := range []string{"f", "g", "h"} {
			must(q.OfferAfter(v, time.Second))
		}
		snap := q.Snapshot()
		if len(snap) != 3 || snap[0].Value != "f" || q.Len() != 3 {
			t.Fatalf("Snapshot = %v (Len %d): it must copy, in delivery order", snap, q.Len())
		}
		var consumed []string
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		for v := range q.Consume(cctx) {
			if consumed = append(consumed, v); len(consumed) == 2 {
				cancel()
			}
		}
		if !slices.Equal(consumed, []string{"f", "g"}) {
			t.Fatalf("Consume = %q, want [f g]", consumed)
		}
		must(q.OfferAfter("i", time.Hour))
		// h is due and nobody takes: Shutdown waits for a taker until its
		// ctx ends, then returns what is left, due items included.
		sctx, scancel := context.WithTimeout(ctx, time.Minute)
		defer scancel()
		rest, err := q.Shutdown(sctx)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Shutdown = %v, want the ctx's error (an item was due)", err)
		}
		if len(rest) != 2 || rest[0].Value != "h" || rest[1].Value != "i" {
			t.Fatalf("Shutdown returned %v, want h then i", rest)
		}
		if _, err := q.Offer("late", time.Now()); !errors.Is(err, dq.ErrClosed) {
			t.Fatalf("Offer after Shutdown = %v, want ErrClosed", err)
		}
		if _, err := q.Take(ctx); !errors.Is(err, dq.ErrClosed) {
			t.Fatalf("Take after Shutdown = %v, want ErrClosed", err)
		}
		if d := q.Drain(); len(d) != 0 {
			t.Fatalf("Drain after Shutdown = %q", d)
		}
		if e := q.DrainEntries(); len(e) != 0 {
			t.Fatalf("DrainEntries after Shutdown = %v", e)
		}
		q.Close() // idempotent after Shutdown

		st := q.Stats()
		if st.Offered != 9 || st.Taken != 6 || st.Removed != 1 || st.Drained != 2 || st.Len != 0 ||
			st.Rescheduled != 1 || st.Lateness.Count != st.Taken {
			t.Fatalf("Stats = %+v: want 9 offered = 6 taken + 1 removed + 2 drained", st)
		}
	})
}

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
