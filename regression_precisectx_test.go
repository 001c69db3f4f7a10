package delayqueue_test

import (
	"context"
	"sync"
	"testing"
	"time"

	dq "github.com/dq-go/delayqueue"
)

// the common idiom "ctx, cancel := context.WithTimeout(...); Take(ctx);
// cancel()". With WithPreciseTimer the leader's ctx registration outlives its
// wait; the cancel() after a successful Take fires the timerfd and wakes the
// next leader for nothing. K items at distinct times should cost <= 2K+2.
func TestRegressionPreciseCancelAfterTakeWakesNextLeader(t *testing.T) {
	for _, precise := range []bool{false, true} {
		opts := []dq.Option{}
		if precise {
			opts = append(opts, dq.WithPreciseTimer())
		}
		q := dq.New[int](opts...)
		const takers, K = 50, 100
		var wg sync.WaitGroup
		got := make(chan int, K)
		for range takers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
					v, err := q.Take(ctx)
					cancel()
					if err != nil {
						return
					}
					got <- v
				}
			}()
		}
		for q.Stats().Waiting < takers {
			time.Sleep(time.Millisecond)
		}
		w0 := q.Stats().Wakeups
		start := time.Now()
		for i := range K {
			q.Offer(i, start.Add(time.Duration(i+1)*2*time.Millisecond))
		}
		for range K {
			<-got
		}
		w := q.Stats().Wakeups - w0
		q.Close()
		wg.Wait()
		t.Logf("precise=%v: %d items, %d wakeups (bound %d)", precise, K, w, 2*K+2)
		if w > 2*K+2 {
			t.Errorf("precise=%v: %d wakeups for %d items > 2K+2", precise, w, K)
		}
	}
}
