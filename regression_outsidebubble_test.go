package delayqueue_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	dq "github.com/dq-go/delayqueue"
)

// a queue created outside a bubble, used inside: now is negative (wall
// clock fallback), a year-9999 head gives d = MaxInt64 - now -> overflow ->
// negative -> the leader's timer fires at once, forever: a spin.
func TestRegressionOutsideBubbleFarFutureSpins(t *testing.T) {
	q := dq.New[int]()
	ctx, cancel := context.WithCancel(context.Background())
	_ = ctx.Done()                               // create the channel outside the bubble
	time.AfterFunc(300*time.Millisecond, cancel) // real time, outside the bubble
	synctest.Test(t, func(t *testing.T) {
		q.Offer(1, time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC))
		_, err := q.Take(ctx)
		if err == nil {
			t.Fatal("took a year-9999 item")
		}
		if w := q.Stats().Wakeups; w > 2 {
			t.Errorf("Wakeups = %d while nothing was due (spin)", w)
		}
	})
}
