//go:build linux

package delayqueue

import (
	"context"
	"errors"
	"os"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"
)

// TestPreciseTimerUsesTimerfd: on Linux the option gives the queue a
// timerfd-backed timer, and the default stays the runtime timer.
func TestPreciseTimerUsesTimerfd(t *testing.T) {
	q := New[int](WithPreciseTimer())
	defer q.Close()
	pt, ok := q.timer.(*preciseTimer)
	if !ok {
		t.Fatalf("WithPreciseTimer: timer is %T, want *preciseTimer", q.timer)
	}
	link, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(pt.fd()))
	if err != nil {
		t.Fatal(err)
	}
	if link != "anon_inode:[timerfd]" {
		t.Errorf("descriptor is %q, want a timerfd", link)
	}
	d := New[int]()
	defer d.Close()
	if _, ok := d.timer.(*runtimeTimer); !ok {
		t.Errorf("default timer is %T, want *runtimeTimer", d.timer)
	}
}

// fd returns the timerfd's descriptor number (for tests).
func (pt *preciseTimer) fd() int {
	var n int
	if err := pt.rc.Control(func(fd uintptr) { n = int(fd) }); err != nil {
		return -1
	}
	return n
}

// TestPreciseTimerSynctestFallback: a queue created in a synctest bubble
// with the option uses the runtime timer, so the bubble's fake clock drives
// it: a Take of an item an hour away returns at once in real time, at
// exactly the fake hour.
func TestPreciseTimerSynctestFallback(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := New[int](WithPreciseTimer())
		defer q.Close()
		if _, ok := q.timer.(*runtimeTimer); !ok {
			t.Fatalf("in a bubble the timer is %T, want *runtimeTimer", q.timer)
		}
		start := time.Now()
		if _, err := q.OfferAfter(7, time.Hour); err != nil {
			t.Fatal(err)
		}
		v, err := q.Take(context.Background())
		if err != nil || v != 7 {
			t.Fatalf("Take = %d, %v", v, err)
		}
		if el := time.Since(start); el != time.Hour {
			t.Errorf("Take returned after %v of fake time, want 1h", el)
		}
	})
	// And outside the bubble the option is in force again.
	q := New[int](WithPreciseTimer())
	defer q.Close()
	if _, ok := q.timer.(*preciseTimer); !ok {
		t.Errorf("outside a bubble the timer is %T, want *preciseTimer", q.timer)
	}
}

// TestPreciseTimerEMFILEFallback: when timerfd_create fails because the
// process is out of descriptors, New still succeeds, with the runtime
// timer, and the queue works.
func TestPreciseTimerEMFILEFallback(t *testing.T) {
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Skip(err)
	}
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip(err)
	}
	lim := old
	lim.Cur = uint64(len(ents) + 32)
	if lim.Cur > old.Cur {
		t.Skip("descriptor limit already low")
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Skip(err)
	}
	var fillers []*os.File
	q := func() *Queue[int] {
		defer func() {
			for _, f := range fillers {
				f.Close()
			}
			if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
				t.Errorf("restoring RLIMIT_NOFILE: %v", err)
			}
		}()
		// Use up every descriptor below the limit.
		for {
			f, err := os.Open(os.DevNull)
			if err != nil {
				if !errors.Is(err, syscall.EMFILE) {
					t.Fatalf("filling the descriptor table: %v", err)
				}
				break
			}
			fillers = append(fillers, f)
		}
		return New[int](WithPreciseTimer())
	}()
	defer q.Close()
	if _, ok := q.timer.(*runtimeTimer); !ok {
		t.Fatalf("with no descriptor free the timer is %T, want *runtimeTimer", q.timer)
	}
	if _, err := q.OfferAfter(1, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if v, err := q.Take(context.Background()); err != nil || v != 1 {
		t.Fatalf("Take = %d, %v", v, err)
	}
}

// TestPreciseTimerWaitAfterClose: a wait that starts on a closed timer (a
// leader that raced with Close) must still end, on the runtime timer.
func TestPreciseTimerWaitAfterClose(t *testing.T) {
	pt := openPreciseTimer()
	if pt == nil {
		t.Skip("no timerfd")
	}
	pt.close()
	pt.close() // idempotent
	ready := make(chan struct{}, 1)
	start := time.Now()
	if err := armWait(pt, context.Background(), 2*time.Millisecond, ready); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el < 2*time.Millisecond {
		t.Errorf("wait on a closed timer returned after %v, before its 2ms", el)
	}
	ready <- struct{}{}
	if err := armWait(pt, context.Background(), time.Hour, ready); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := armWait(pt, ctx, time.Hour, ready); !errors.Is(err, context.Canceled) {
		t.Fatalf("wait with a cancelled ctx = %v, want context.Canceled", err)
	}
}

// TestPreciseTimerWaitNeverEarly drives the timer directly: a wait of d
// with nothing else happening ends, lasting at least d on the monotonic
// clock, and a stale wake or expiry from an earlier wait does not end a
// later one early.
func TestPreciseTimerWaitNeverEarly(t *testing.T) {
	pt := openPreciseTimer()
	if pt == nil {
		t.Skip("no timerfd")
	}
	defer pt.close()
	ready := make(chan struct{}, 1)
	for i := range 200 {
		if i%3 == 0 {
			pt.wake() // a wake for a wait that already ended
		}
		if i%3 == 1 {
			// An expiry nobody read: a short wait cut short by ready.
			ready <- struct{}{}
			if err := armWait(pt, context.Background(), time.Microsecond, ready); err != nil {
				t.Fatal(err)
			}
			time.Sleep(20 * time.Microsecond)
		}
		// From 1 ns, expiring before the wait parks, to about 1 ms.
		d := time.Duration(i*i*25) + 1
		start := time.Now()
		if err := waitWithin(t, pt, context.Background(), d, ready); err != nil {
			t.Fatal(err)
		}
		if el := time.Since(start); el < d {
			t.Fatalf("wait %d of %v returned after %v", i, d, el)
		}
	}
}

// waitWithin runs armWait(pt, ctx, d, ready) and fails the test unless it
// returns within a bound far above any real lateness (and below d, when d
// is an hour and only a wake-up should end the wait).
func waitWithin(t *testing.T, pt *preciseTimer, ctx context.Context, d time.Duration, ready chan struct{}) error {
	t.Helper()
	errc := make(chan error, 1)
	go func() { errc <- armWait(pt, ctx, d, ready) }()
	select {
	case err := <-errc:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("wait not ended: a wake-up was lost")
		return nil
	}
}

// TestPreciseTimerWakeBeforeBlock: a wake that lands after the leader let
// go of Queue.mu but before wait armed the timer (token sent, timer fired,
// then overwritten by the arming) must still end the wait.
func TestPreciseTimerWakeBeforeBlock(t *testing.T) {
	pt := openPreciseTimer()
	if pt == nil {
		t.Skip("no timerfd")
	}
	defer pt.close()
	ready := make(chan struct{}, 1)
	for range 20 {
		ready <- struct{}{} // what newHeadLocked does: signal, then wake
		pt.wake()
		if err := waitWithin(t, pt, context.Background(), time.Hour, ready); err != nil {
			t.Fatal(err)
		}
	}
}

// lyingCtx reports no error on the first Err call after lie is set, as if
// it were cancelled just after wait checked it.
type lyingCtx struct {
	context.Context
	lie bool
}

func (c *lyingCtx) Err() error {
	if c.lie {
		c.lie = false
		return nil
	}
	return c.Context.Err()
}

// TestPreciseTimerCancelBeforeBlock: a ctx cancelled after wait checked it
// but whose AfterFunc fired before wait armed the timer must still end the
// wait, with the ctx's error.
func TestPreciseTimerCancelBeforeBlock(t *testing.T) {
	pt := openPreciseTimer()
	if pt == nil {
		t.Skip("no timerfd")
	}
	defer pt.close()
	ready := make(chan struct{}, 1)
	for range 20 {
		inner, cancel := context.WithCancel(context.Background())
		ctx := &lyingCtx{Context: inner}
		// A first wait registers ctx with the timer.
		if err := armWait(pt, ctx, 100*time.Microsecond, ready); err != nil {
			t.Fatal(err)
		}
		cancel()
		time.Sleep(5 * time.Millisecond) // let the AfterFunc fire the timer
		ctx.lie = true
		if err := waitWithin(t, pt, ctx, time.Hour, ready); !errors.Is(err, context.Canceled) {
			t.Fatalf("wait = %v, want context.Canceled", err)
		}
	}
}

// armWait does what a leader does: arm the timer for d, then wait on it.
func armWait(pt *preciseTimer, ctx context.Context, d time.Duration, ready <-chan struct{}) error {
	pt.arm(d)
	return pt.wait(ctx, ready)
}

// TestPreciseTimerReArmWhileParked: a parked wait ends at the time of the
// latest arming, made by another goroutine while it is parked, both when
// that brings the expiry earlier and when it moves it later.
func TestPreciseTimerReArmWhileParked(t *testing.T) {
	pt := openPreciseTimer()
	if pt == nil {
		t.Skip("no timerfd")
	}
	defer pt.close()
	ready := make(chan struct{})
	for range 20 {
		pt.arm(time.Hour)
		start := time.Now()
		errc := make(chan error, 1)
		go func() { errc <- pt.wait(context.Background(), ready) }()
		time.Sleep(time.Millisecond) // most likely parked by now; either way must work
		pt.arm(2 * time.Millisecond)
		select {
		case err := <-errc:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("re-arming a parked wait earlier did not end it")
		}
		if el := time.Since(start); el < 3*time.Millisecond {
			t.Fatalf("wait ended after %v, before the re-armed expiry", el)
		}
	}
	// Later: a wait armed for 1ms, re-armed for 30ms, must not end at 1ms.
	pt.arm(time.Millisecond)
	pt.arm(30 * time.Millisecond)
	start := time.Now()
	if err := pt.wait(context.Background(), ready); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el < 30*time.Millisecond {
		t.Fatalf("wait ended after %v, at the earlier arming", el)
	}
}

// TestRegressionPreciseFallbackRace pins a bug: preciseTimer.settime stored
// failed=true before it created the fallback runtime timer (fallback.t), and
// wait read fallback.t after loading failed without holding Queue.mu: a data
// race, and a nil dereference if the load landed between the Store and the
// creation. Reachable after Close: the leader unlocks to wait while
// Close+Remove(head) re-arms under q.mu.
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

// TestRegressionPreciseCloseRemoveStress: the same through the public API,
// stressed.
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
