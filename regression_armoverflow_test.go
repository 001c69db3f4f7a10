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

// Same through Reschedule and through a far-past OfferAfter.
func TestRegressionZeroTimeRescheduleWhileLeaderSleeps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := dq.New[int]()
		h, _ := q.Offer(1, time.Now().Add(time.Hour))
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		res := make(chan error, 1)
		go func() { _, err := q.Take(ctx); res <- err }()
		time.Sleep(time.Second)
		synctest.Wait()
		q.Reschedule(h, time.Time{})
		synctest.Wait()
		if err := <-res; err != nil {
			t.Errorf("Take after Reschedule to zero time: %v (len=%d)", err, q.Len())
		}
	})
}

func TestRegressionFarPastOfferAfterWhileLeaderSleeps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := dq.New[int]()
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		res := make(chan error, 1)
		go func() { _, err := q.Take(ctx); res <- err }()
		time.Sleep(time.Second)
		synctest.Wait()
		q.Offer(1, time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC))
		synctest.Wait()
		if err := <-res; err != nil {
			t.Errorf("Take of a year-1 item: %v (len=%d)", err, q.Len())
		}
	})
}
