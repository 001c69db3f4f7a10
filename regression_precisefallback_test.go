//go:build linux

package delayqueue

import (
	"context"
	"sync"
	"testing"
	"time"
)

// preciseTimer.settime stores failed=true before it creates the fallback
// runtime timer (fallback.t), and wait reads fallback.t after loading failed
// without holding Queue.mu: a data race, and a nil dereference if the load
// lands between the Store and the creation. Reachable after Close: the
// leader unlocks to wait while Close+Remove(head) re-arms under q.mu.
func TestRegressionPreciseFallbackRace(t *testing.T) {
	for range 200 {
		pt := openPreciseTimer()
		if pt == nil {
			t.Skip("no timerfd")
		}
		var mu sync.Mutex // stands for Queue.mu
		ready := make(chan struct{}, 1)
		mu.Lock()
		pt.arm(time.Hour) // the leader arms under q.mu, then unlocks
		mu.Unlock()
		done := make(chan struct{})
		go func() { // Close, then Remove of the head re-arms (leaderAsleep)
			mu.Lock()
			ready <- struct{}{}
			pt.wake()
			pt.close()
			pt.arm(time.Minute)
			mu.Unlock()
			close(done)
		}()
		for !pt.failed.Load() {
		}
		pt.wait(context.Background(), ready) // the leader, without q.mu
		<-done
	}
}

// R4b: the same through the public API, stressed.
func TestRegressionPreciseCloseRemoveStress(t *testing.T) {
	for range 3000 {
		q := New[int](WithPreciseTimer())
		h, _ := q.Offer(1, time.Now().Add(time.Hour))
		res := make(chan error, 1)
		go func() { _, err := q.Take(context.Background()); res <- err }()
		for {
			q.mu.Lock()
			asleep := q.leaderAsleep
			q.mu.Unlock()
			if asleep {
				break
			}
		}
		q.Close()
		q.Remove(h)
		if err := <-res; err != ErrClosed {
			t.Fatal(err)
		}
	}
}
