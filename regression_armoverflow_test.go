package delayqueue_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	dq "github.com/dq-go/delayqueue"
)

// an Offer with the zero time (documented "due at once") made while a
// leader sleeps re-arms the leader's timer with head.at-now, which overflows
// (MinInt64 - now) to ~292 years: the blocked Take never wakes.
func TestRegressionZeroTimeOfferWhileLeaderSleeps(t *testing.T) {
	for _, precise := range []bool{false, true} {
		var opts []dq.Option
		if precise {
			opts = append(opts, dq.WithPreciseTimer())
		}
		q := dq.New[int](opts...)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		res := make(chan error, 1)
		go func() { _, err := q.Take(ctx); res <- err }()
		for q.Stats().Waiting == 0 {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(10 * time.Millisecond)
		if _, err := q.Offer(1, time.Time{}); err != nil {
			t.Fatal(err)
		}
		if err := <-res; err != nil {
			t.Errorf("precise=%v: Take of a zero-time item: %v (len=%d)", precise, err, q.Len())
		}
		cancel()
		q.Close()
	}
}

// takeAfterHeadChange blocks a Take as the sleeping leader (head an hour
// away, or none), lets change move the head to a far-past deadline, and
// reports whether the Take then got an item within a minute of fake time.
func takeAfterHeadChange(t *testing.T, q *dq.Queue[int], what string, change func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	res := make(chan error, 1)
	go func() { _, err := q.Take(ctx); res <- err }()
	time.Sleep(time.Second)
	synctest.Wait()
	change()
	synctest.Wait()
	if err := <-res; err != nil {
		t.Errorf("Take after %s: %v (len=%d)", what, err, q.Len())
	}
}

// Same through Reschedule and through an Offer of a year-1 deadline.
func TestRegressionZeroTimeRescheduleWhileLeaderSleeps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := dq.New[int]()
		h, _ := q.Offer(1, time.Now().Add(time.Hour))
		takeAfterHeadChange(t, q, "Reschedule to zero time", func() { q.Reschedule(h, time.Time{}) })
	})
}

func TestRegressionFarPastOfferAfterWhileLeaderSleeps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := dq.New[int]()
		takeAfterHeadChange(t, q, "Offer of a year-1 item", func() {
			q.Offer(1, time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC))
		})
	})
}

// On Go 1.25 a goroutine receiving from a time.Timer that another goroutine
// Reset(0) inside a testing/synctest bubble is never woken
// (golang/go#76052). The leader's timer was re-armed with 0 whenever a new
// head was already due, so a user's synctest test with a blocked Take hung
// on Go 1.25 when it offered an item due now. A due head now wakes the
// leader with a token instead.
func TestRegressionDueOfferWakesLeaderInSynctest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := dq.New[int]()
		takeAfterHeadChange(t, q, "Offer of an item due now", func() { q.Offer(1, time.Now()) })
		h, _ := q.OfferAfter(2, time.Hour)
		takeAfterHeadChange(t, q, "Reschedule to now", func() { q.Reschedule(h, time.Now()) })
	})
}
