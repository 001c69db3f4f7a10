package delayqueue_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dq-go/delayqueue"
)

// The real-clock part of the contract, run with the default timer and with
// WithPreciseTimer. These tests assert accounting, exactly-once delivery,
// ordering, and that nothing is delivered before its deadline (on the
// monotonic clock); they make no lateness assertion, which could flake. A
// lost wake-up shows as a Take that does not return: preciseWithin fails
// the test after a generous bound instead of hanging it.

var preciseTimers = []struct {
	name string
	opts []delayqueue.Option
}{
	{"runtime", nil},
	{"precise", []delayqueue.Option{delayqueue.WithPreciseTimer()}},
}

// forEachTimer runs f as a subtest once per leader timer.
func forEachTimer(t *testing.T, f func(t *testing.T, opts []delayqueue.Option)) {
	for _, tm := range preciseTimers {
		t.Run(tm.name, func(t *testing.T) { f(t, tm.opts) })
	}
}

// preciseBound is how long an event that should be prompt may take before
// the test calls it lost. It is far above any real lateness, so only a
// missed wake-up (a wait for the old, hour-away deadline) can exceed it.
const preciseBound = 10 * time.Second

// preciseWithin waits for done or fails the test after preciseBound.
func preciseWithin(t *testing.T, done <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(preciseBound):
		t.Fatalf("%s: not done after %v (lost wake-up?)", what, preciseBound)
	}
}

// preciseEventually polls cond until it holds or fails after preciseBound.
func preciseEventually(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(preciseBound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not true after %v", what, preciseBound)
		}
		time.Sleep(time.Millisecond)
	}
}

// stamped is an item that knows its deadline (with a monotonic reading).
type stamped struct {
	id int
	at time.Time
}

// checkNotEarly fails if v is delivered at now before its deadline.
func checkNotEarly(t *testing.T, v stamped, now time.Time) {
	t.Helper()
	if now.Before(v.at) {
		t.Errorf("item %d delivered %v before its deadline", v.id, v.at.Sub(now))
	}
}

// TestTimerStress runs producers, consumers (Take with and without
// short-lived ctxs, TakeBatch) and a remover/rescheduler against one queue,
// then checks that every item left exactly once, never early.
func TestTimerStress(t *testing.T) {
	forEachTimer(t, func(t *testing.T, opts []delayqueue.Option) {
		const producers, perProducer, consumers = 4, 2000, 4
		const total = producers * perProducer
		q := delayqueue.New[int](opts...)
		defer q.Close()

		base := time.Now()
		// deadline[id]: ns since base. A reschedule stores the earlier
		// deadline before making the call, so delivery >= deadline[id]
		// holds whether the item leaves before or after the reschedule.
		var deadline [total]atomic.Int64
		handles := make(chan struct {
			id int
			h  delayqueue.Handle
		}, total)

		var prodWG sync.WaitGroup
		for p := range producers {
			prodWG.Go(func() {
				r := rand.New(rand.NewPCG(uint64(p), 1))
				for i := range perProducer {
					id := p*perProducer + i
					at := time.Now().Add(time.Duration(r.IntN(30_000)) * time.Microsecond)
					deadline[id].Store(int64(at.Sub(base)))
					h, err := q.Offer(id, at)
					if err != nil {
						t.Errorf("Offer: %v", err)
						return
					}
					handles <- struct {
						id int
						h  delayqueue.Handle
					}{id, h}
					if i%64 == 0 {
						time.Sleep(100 * time.Microsecond)
					}
				}
			})
		}
		go func() { prodWG.Wait(); close(handles) }()

		var removed [total]atomic.Int32
		var delivered [total]atomic.Int32
		var early atomic.Int64

		remDone := make(chan struct{})
		go func() {
			defer close(remDone)
			r := rand.New(rand.NewPCG(99, 2))
			for e := range handles {
				switch r.IntN(8) {
				case 0, 1:
					if _, ok := q.Remove(e.h); ok {
						removed[e.id].Add(1)
					}
				case 2:
					at := time.Now().Add(time.Duration(r.IntN(2000)) * time.Microsecond)
					if ns := int64(at.Sub(base)); ns < deadline[e.id].Load() {
						deadline[e.id].Store(ns)
						q.Reschedule(e.h, at)
					}
				}
			}
		}()

		deliver := func(id int) {
			now := int64(time.Since(base))
			if now < deadline[id].Load() {
				early.Add(1)
			}
			delivered[id].Add(1)
		}
		var consWG sync.WaitGroup
		for c := range consumers {
			consWG.Go(func() {
				var batch []int
				for i := 0; ; i++ {
					switch c {
					case 0: // Take, no ctx
						v, err := q.Take(context.Background())
						if err != nil {
							if !errors.Is(err, delayqueue.ErrClosed) {
								t.Errorf("Take: %v", err)
							}
							return
						}
						deliver(v)
					case 1: // Take with a ctx that often ends first
						ctx, cancel := context.WithTimeout(context.Background(), time.Duration(i%7)*200*time.Microsecond)
						v, err := q.Take(ctx)
						cancel()
						switch {
						case err == nil:
							deliver(v)
						case errors.Is(err, delayqueue.ErrClosed):
							return
						case !errors.Is(err, context.DeadlineExceeded):
							t.Errorf("Take: %v", err)
							return
						}
					case 2: // TakeBatch
						var err error
						batch, err = q.TakeBatch(context.Background(), batch[:0], 16)
						if err != nil {
							if !errors.Is(err, delayqueue.ErrClosed) {
								t.Errorf("TakeBatch: %v", err)
							}
							return
						}
						for _, v := range batch {
							deliver(v)
						}
					default: // Take with one long-lived cancellable ctx
						ctx, cancel := context.WithCancel(context.Background())
						for {
							v, err := q.Take(ctx)
							if err != nil {
								cancel()
								if !errors.Is(err, delayqueue.ErrClosed) {
									t.Errorf("Take: %v", err)
								}
								return
							}
							deliver(v)
						}
					}
				}
			})
		}

		<-remDone
		preciseEventually(t, func() bool {
			s := q.Stats()
			return s.Offered == total && s.Taken+s.Removed == total
		}, "all items taken or removed")
		q.Close()
		consDone := make(chan struct{})
		go func() { consWG.Wait(); close(consDone) }()
		preciseWithin(t, consDone, "consumers return after Close")

		for id := range total {
			d, r := delivered[id].Load(), removed[id].Load()
			if d+r != 1 {
				t.Errorf("item %d: delivered %d times, removed %d times", id, d, r)
			}
		}
		if n := early.Load(); n > 0 {
			t.Errorf("%d items delivered before their deadline", n)
		}
		s := q.Stats()
		if s.Len != 0 || s.Offered != s.Taken+s.Removed {
			t.Errorf("stats %+v: want Len 0 and Offered == Taken+Removed", s)
		}
	})
}

// TestTimerOrder preloads items with future deadlines, many of them equal,
// offered in shuffled order; one consumer must receive them in exactly
// (deadline, offer order) order, each at or after its deadline.
func TestTimerOrder(t *testing.T) {
	forEachTimer(t, func(t *testing.T, opts []delayqueue.Option) {
		const n = 1500
		q := delayqueue.New[stamped](opts...)
		defer q.Close()
		start := time.Now().Add(20 * time.Millisecond)
		items := make([]stamped, n)
		for i := range items {
			// 100 distinct deadlines 0.5 ms apart, 15 items each.
			items[i] = stamped{id: i, at: start.Add(time.Duration(i%100) * 500 * time.Microsecond)}
		}
		rand.Shuffle(n, func(i, j int) { items[i], items[j] = items[j], items[i] })
		for _, it := range items {
			if _, err := q.Offer(it, it.at); err != nil {
				t.Fatal(err)
			}
		}
		want := slices.Clone(items) // offer order breaks ties: stable sort
		slices.SortStableFunc(want, func(a, b stamped) int { return a.at.Compare(b.at) })

		got := make([]stamped, 0, n)
		done := make(chan struct{})
		go func() {
			defer close(done)
			for range n {
				v, err := q.Take(context.Background())
				if err != nil {
					t.Errorf("Take: %v", err)
					return
				}
				checkNotEarly(t, v, time.Now())
				got = append(got, v)
			}
		}()
		preciseWithin(t, done, "taking all items")
		if !slices.Equal(got, want) {
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("delivery %d: got item %d (at %v), want item %d (at %v)",
						i, got[i].id, got[i].at.Sub(start), want[i].id, want[i].at.Sub(start))
				}
			}
			t.Fatalf("got %d items, want %d", len(got), n)
		}
	})
}

// TestTimerCancelVsDue races a Take's ctx deadline against the item's
// deadline (from a little before to a little after it): either the item is returned (and the queue is then empty) or
// the ctx error is, and the item is still there. Never both, never neither.
func TestTimerCancelVsDue(t *testing.T) {
	forEachTimer(t, func(t *testing.T, opts []delayqueue.Option) {
		q := delayqueue.New[int](opts...)
		defer q.Close()
		var got, left int
		for i := range 400 {
			d := time.Duration(100+i%5*50) * time.Microsecond
			at := time.Now().Add(d)
			if _, err := q.Offer(i, at); err != nil {
				t.Fatal(err)
			}
			// The ctx ends from 150 µs before to 150 µs after the item is due.
			ctx, cancel := context.WithDeadline(context.Background(), at.Add(time.Duration(i%7-3)*50*time.Microsecond))
			v, err := q.Take(ctx)
			cancel()
			switch {
			case err == nil:
				if v != i {
					t.Fatalf("got %d, want %d", v, i)
				}
				if time.Now().Before(at) {
					t.Fatalf("item %d delivered early", i)
				}
				if n := q.Len(); n != 0 {
					t.Fatalf("item taken but Len = %d", n)
				}
				got++
			case errors.Is(err, context.DeadlineExceeded):
				if n := q.Len(); n != 1 {
					t.Fatalf("ctx ended but Len = %d, want the item still queued", n)
				}
				// It is still there and falls due: Poll must get it.
				preciseEventually(t, func() bool {
					v, ok := q.Poll()
					if ok && v != i {
						t.Fatalf("Poll got %d, want %d", v, i)
					}
					return ok
				}, "Poll the item left behind")
				left++
			default:
				t.Fatalf("Take: %v", err)
			}
		}
		s := q.Stats()
		if s.Offered != 400 || s.Taken != 400 || s.Len != 0 {
			t.Errorf("stats %+v", s)
		}
		t.Logf("taken by Take %d, left for Poll %d", got, left)
	})
}

// TestTimerCloseWakesTakers blocks a leader (on an item an hour away) and
// followers, Take and TakeBatch, then closes: all return ErrClosed, and the
// item stays for Drain.
func TestTimerCloseWakesTakers(t *testing.T) {
	forEachTimer(t, func(t *testing.T, opts []delayqueue.Option) {
		q := delayqueue.New[int](opts...)
		if _, err := q.OfferAfter(1, time.Hour); err != nil {
			t.Fatal(err)
		}
		const takers = 8
		errs := make(chan error, takers)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		for i := range takers {
			go func() {
				var err error
				switch i % 3 {
				case 0:
					_, err = q.Take(context.Background())
				case 1:
					_, err = q.Take(ctx) // a cancellable ctx, never cancelled here
				default:
					_, err = q.TakeBatch(ctx, nil, 0)
				}
				errs <- err
			}()
		}
		preciseEventually(t, func() bool { return q.Stats().Waiting == takers }, "takers blocked")
		q.Close()
		done := make(chan struct{})
		go func() {
			defer close(done)
			for range takers {
				if err := <-errs; !errors.Is(err, delayqueue.ErrClosed) {
					t.Errorf("blocked taker got %v, want ErrClosed", err)
				}
			}
		}()
		preciseWithin(t, done, "takers return after Close")
		if got := q.Drain(); !slices.Equal(got, []int{1}) {
			t.Errorf("Drain after Close = %v, want [1]", got)
		}
		if _, err := q.Take(context.Background()); !errors.Is(err, delayqueue.ErrClosed) {
			t.Errorf("Take after Close: %v, want ErrClosed", err)
		}
	})
}

// TestTimerLeaderHandOffOnCancel cancels the leader's ctx while a follower
// waits: the follower must take over and get the item when it is due. A
// round in which the item fell due before the two takers were set up (a
// loaded machine) proves nothing and is repeated.
func TestTimerLeaderHandOffOnCancel(t *testing.T) {
	forEachTimer(t, func(t *testing.T, opts []delayqueue.Option) {
		const rounds = 10
		ok := 0
		for attempt := 0; ok < rounds && attempt < 10*rounds; attempt++ {
			if handOffRound(t, opts, attempt) {
				ok++
			}
		}
		if ok < rounds {
			t.Fatalf("only %d of %d rounds set up before the item fell due", ok, rounds)
		}
	})
}

// handOffRound runs one round of TestTimerLeaderHandOffOnCancel and reports
// whether it was set up in time to test anything.
func handOffRound(t *testing.T, opts []delayqueue.Option, id int) bool {
	t.Helper()
	q := delayqueue.New[stamped](opts...)
	defer q.Close()
	at := time.Now().Add(50 * time.Millisecond)
	if _, err := q.Offer(stamped{id, at}, at); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	leaderErr := make(chan error, 1)
	go func() { _, err := q.Take(ctx); leaderErr <- err }()
	follower := make(chan error, 1)
	var got stamped
	// The first blocked taker becomes the leader; the second follows.
	preciseEventually(t, func() bool { return q.Stats().Waiting == 1 || q.Len() == 0 }, "leader blocked")
	go func() {
		v, err := q.Take(context.Background())
		if err == nil {
			checkNotEarly(t, v, time.Now())
			got = v
		}
		follower <- err
	}()
	preciseEventually(t, func() bool { return q.Stats().Waiting == 2 || q.Len() == 0 }, "follower blocked")
	cancel()
	select {
	case err := <-leaderErr:
		if err == nil { // it took the item before the cancel: void round
			q.Close()
			<-follower
			return false
		}
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("leader: %v, want context.Canceled", err)
		}
	case <-time.After(preciseBound):
		t.Fatal("leader did not return after its ctx was cancelled")
	}
	select {
	case err := <-follower:
		if err != nil {
			t.Fatalf("follower: %v", err)
		}
		if got.id != id {
			t.Fatalf("follower got %d, want %d", got.id, id)
		}
	case <-time.After(preciseBound):
		t.Fatal("follower did not take over")
	}
	return true
}

// TestTimerEarlierHeadWakesLeader: a leader sleeping until an item an hour
// away must be woken, by Offer or by Reschedule, for an earlier head. It
// repeats with the earlier head arriving at random points of the leader's
// way into its wait, where a wake between arming and blocking could be lost.
func TestTimerEarlierHeadWakesLeader(t *testing.T) {
	forEachTimer(t, func(t *testing.T, opts []delayqueue.Option) {
		q := delayqueue.New[int](opts...)
		defer q.Close()
		if _, err := q.OfferAfter(-1, time.Hour); err != nil {
			t.Fatal(err)
		}
		later, err := q.OfferAfter(-2, 2*time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 1000 {
			got := make(chan int, 1)
			go func() {
				v, err := q.Take(context.Background())
				if err != nil {
					t.Errorf("Take: %v", err)
				}
				got <- v
			}()
			if i%2 == 0 {
				// Wait for the taker to block sometimes; race it otherwise.
				preciseEventually(t, func() bool { return q.Stats().Waiting == 1 }, "taker blocked")
			} else {
				for range rand.IntN(200) {
					runtime.Gosched()
				}
			}
			want := i
			if i%4 < 2 {
				if _, err := q.OfferAfter(i, time.Duration(rand.IntN(50))*time.Microsecond); err != nil {
					t.Fatal(err)
				}
			} else {
				// Move the 2-hour item ahead of the 1-hour head, then put
				// a fresh one back for the next round.
				q.Reschedule(later, time.Now().Add(time.Duration(rand.IntN(50))*time.Microsecond))
				want = -2
			}
			select {
			case v := <-got:
				if v != want {
					t.Fatalf("round %d: got %d, want %d", i, v, want)
				}
			case <-time.After(preciseBound):
				t.Fatalf("round %d: leader not woken by an earlier head", i)
			}
			if want == -2 {
				if later, err = q.OfferAfter(-2, 2*time.Hour); err != nil {
					t.Fatal(err)
				}
			}
		}
		if n := q.Len(); n != 2 {
			t.Errorf("Len = %d, want the two far items", n)
		}
	})
}

// TestTimerCtxCancelEndsWait cancels the ctx of a leader sleeping on an item
// an hour away, at random points of its way into the wait; it also reuses
// one ctx across several waits first (the precise timer keeps its ctx
// registration while the ctx stays the same).
func TestTimerCtxCancelEndsWait(t *testing.T) {
	forEachTimer(t, func(t *testing.T, opts []delayqueue.Option) {
		q := delayqueue.New[int](opts...)
		defer q.Close()
		if _, err := q.OfferAfter(-1, time.Hour); err != nil {
			t.Fatal(err)
		}
		for i := range 500 {
			ctx, cancel := context.WithCancel(context.Background())
			// Two items taken under the same ctx before it is cancelled.
			for k := range 2 {
				if _, err := q.OfferAfter(k, 200*time.Microsecond); err != nil {
					t.Fatal(err)
				}
				if v, err := q.Take(ctx); err != nil || v != k {
					t.Fatalf("round %d: Take = %d, %v; want %d, nil", i, v, err, k)
				}
			}
			errc := make(chan error, 1)
			go func() { _, err := q.Take(ctx); errc <- err }()
			if i%2 == 0 {
				preciseEventually(t, func() bool { return q.Stats().Waiting == 1 }, "taker blocked")
			} else {
				for range rand.IntN(200) {
					runtime.Gosched()
				}
			}
			cancel()
			select {
			case err := <-errc:
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("round %d: Take = %v, want context.Canceled", i, err)
				}
			case <-time.After(preciseBound):
				t.Fatalf("round %d: cancelling ctx did not end the wait", i)
			}
		}
		if n := q.Len(); n != 1 {
			t.Errorf("Len = %d, want 1", n)
		}
	})
}

// TestTimerHerdBound: with many blocked takers, one item falling due costs
// a bounded number of wake-ups (promote one follower, its timer fires).
func TestTimerHerdBound(t *testing.T) {
	forEachTimer(t, func(t *testing.T, opts []delayqueue.Option) {
		const takers, items = 50, 20
		q := delayqueue.New[stamped](opts...)
		defer q.Close()
		var wg sync.WaitGroup
		got := make(chan stamped, items)
		for range takers {
			wg.Go(func() {
				v, err := q.Take(context.Background())
				if err == nil {
					checkNotEarly(t, v, time.Now())
					got <- v
				} else if !errors.Is(err, delayqueue.ErrClosed) {
					t.Errorf("Take: %v", err)
				}
			})
		}
		preciseEventually(t, func() bool { return q.Stats().Waiting == takers }, "takers blocked")
		before := q.Stats().Wakeups
		start := time.Now()
		for i := range items {
			at := start.Add(time.Duration(5+i) * time.Millisecond)
			if _, err := q.Offer(stamped{i, at}, at); err != nil {
				t.Fatal(err)
			}
		}
		preciseEventually(t, func() bool { return q.Stats().Taken == items }, "items taken")
		preciseEventually(t, func() bool { return q.Stats().Waiting == takers-items }, "takers settle")
		w := q.Stats().Wakeups - before
		// The README's bound: K items due at K distinct times cost at most
		// 2K+2 wake-ups.
		if w > 2*items+2 {
			t.Errorf("%d wake-ups for %d items with %d takers, want <= %d", w, items, takers, 2*items+2)
		}
		q.Close()
		wg.Wait()
		close(got)
		seen := map[int]bool{}
		for v := range got {
			if seen[v.id] {
				t.Errorf("item %d delivered twice", v.id)
			}
			seen[v.id] = true
		}
		if len(seen) != items {
			t.Errorf("%d distinct items delivered, want %d", len(seen), items)
		}
		t.Logf("%d wake-ups for %d items", w, items)
	})
}

// TestTimerTakeAllocs: a Take that waits on the timer allocates nothing in
// steady state, with context.Background or with one reused cancellable ctx.
func TestTimerTakeAllocs(t *testing.T) {
	if testing.Short() {
		t.Skip("real waits")
	}
	forEachTimer(t, func(t *testing.T, opts []delayqueue.Option) {
		q := delayqueue.New[int](opts...)
		defer q.Close()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		for _, c := range []struct {
			name string
			ctx  context.Context
		}{{"Background", context.Background()}, {"WithCancel", ctx}} {
			waits := q.Stats().Wakeups
			allocs := testing.AllocsPerRun(50, func() {
				if _, err := q.OfferAfter(1, 300*time.Microsecond); err != nil {
					t.Fatal(err)
				}
				if _, err := q.Take(c.ctx); err != nil {
					t.Fatal(err)
				}
			})
			if allocs != 0 {
				t.Errorf("%s: %v allocations per Take", c.name, allocs)
			}
			if q.Stats().Wakeups == waits {
				t.Errorf("%s: no Take waited; the test measured nothing", c.name)
			}
		}
	})
}

// openFDs counts the process's open file descriptors (Linux).
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("cannot count open fds: %v", err)
	}
	return len(ents)
}

// TestPreciseTimerNoFDLeak opens and closes many queues with the option,
// each used by a waiting Take (with and without a cancellable ctx), and
// checks the open descriptor count: one more per open queue, back to the
// start once they are closed.
func TestPreciseTimerNoFDLeak(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("timerfd is Linux-only")
	}
	const n = 100
	start := openFDs(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	qs := make([]*delayqueue.Queue[int], n)
	for i := range qs {
		qs[i] = delayqueue.New[int](delayqueue.WithPreciseTimer())
	}
	if got := openFDs(t); got != start+n {
		t.Fatalf("%d fds open with %d precise queues, want %d: one timerfd each", got, n, start+n)
	}
	for i, q := range qs {
		c := context.Background()
		if i%2 == 0 {
			c = ctx
		}
		if _, err := q.OfferAfter(i, 200*time.Microsecond); err != nil {
			t.Fatal(err)
		}
		if v, err := q.Take(c); err != nil || v != i {
			t.Fatalf("Take = %d, %v", v, err)
		}
		// Leave a leader blocked in the timerfd read on half of them.
		if i%4 < 2 {
			if _, err := q.OfferAfter(i, time.Hour); err != nil {
				t.Fatal(err)
			}
		}
	}
	var wg sync.WaitGroup
	for i, q := range qs {
		if i%4 < 2 {
			wg.Go(func() {
				if _, err := q.Take(ctx); !errors.Is(err, delayqueue.ErrClosed) {
					t.Errorf("Take: %v, want ErrClosed", err)
				}
			})
		}
	}
	for i, q := range qs {
		if i%4 < 2 {
			preciseEventually(t, func() bool { return q.Stats().Waiting == 1 }, "taker blocked")
		}
	}
	for _, q := range qs {
		q.Close()
		q.Close() // idempotent: must not close a reused descriptor number
	}
	wg.Wait()
	if got := openFDs(t); got != start {
		t.Errorf("%d fds open after Close, want %d", got, start)
	}
}

// TestPreciseTimerDroppedQueueFDReclaimed drops queues without Close, after
// using them with a ctx that stays alive: the garbage collector must still
// release their timerfds (the ctx registration must not pin them).
func TestPreciseTimerDroppedQueueFDReclaimed(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("timerfd is Linux-only")
	}
	const n = 50
	start := openFDs(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The queues stay reachable until the count, so that a collection
	// during the loop cannot close some of their timerfds early.
	qs := make([]*delayqueue.Queue[int], n)
	for i := range qs {
		q := delayqueue.New[int](delayqueue.WithPreciseTimer())
		if _, err := q.OfferAfter(i, 200*time.Microsecond); err != nil {
			t.Fatal(err)
		}
		if _, err := q.Take(ctx); err != nil {
			t.Fatal(err)
		}
		qs[i] = q
	}
	if got := openFDs(t); got != start+n {
		t.Fatalf("%d fds open, want %d", got, start+n)
	}
	runtime.KeepAlive(qs) // and not after
	preciseEventually(t, func() bool {
		runtime.GC()
		return openFDs(t) == start
	}, "dropped queues' timerfds closed by the GC")
}

// TestTimerCancelRacingHeadChange pins a lost cancellation: with
// WithPreciseTimer a cancelled ctx ended the leader's wait by arming the
// timerfd to expire at once, outside the queue's mutex, and a head change
// (Offer of an earlier head, Remove, Reschedule or Poll of the head) that
// re-armed the timerfd at about the same moment discarded that expiry, so
// the cancelled Take slept until the head's deadline, or for ever on an
// empty queue. Each round blocks one Take, then cancels its ctx and changes
// the head at once; the Take must return within the bound.
func TestTimerCancelRacingHeadChange(t *testing.T) {
	type op struct {
		name string
		// setup fills the queue before the Take blocks; due, if not zero,
		// is when the head falls due (the round waits for it before the
		// race); change changes the head, racing with cancel.
		setup  func(q *delayqueue.Queue[int]) (h delayqueue.Handle, due time.Time)
		change func(q *delayqueue.Queue[int], h delayqueue.Handle)
	}
	none := delayqueue.Handle{}
	ops := []op{
		{"offer-on-empty",
			func(*delayqueue.Queue[int]) (delayqueue.Handle, time.Time) { return none, time.Time{} },
			func(q *delayqueue.Queue[int], _ delayqueue.Handle) { q.OfferAfter(1, time.Hour) }},
		{"offer-earlier",
			func(q *delayqueue.Queue[int]) (delayqueue.Handle, time.Time) {
				q.OfferAfter(0, 2*time.Hour)
				return none, time.Time{}
			},
			func(q *delayqueue.Queue[int], _ delayqueue.Handle) { q.OfferAfter(1, time.Hour) }},
		{"remove-head",
			func(q *delayqueue.Queue[int]) (delayqueue.Handle, time.Time) {
				h, _ := q.OfferAfter(0, time.Hour)
				return h, time.Time{}
			},
			func(q *delayqueue.Queue[int], h delayqueue.Handle) { q.Remove(h) }},
		{"reschedule-head",
			func(q *delayqueue.Queue[int]) (delayqueue.Handle, time.Time) {
				h, _ := q.OfferAfter(0, time.Hour)
				return h, time.Time{}
			},
			func(q *delayqueue.Queue[int], h delayqueue.Handle) { q.Reschedule(h, time.Now().Add(2*time.Hour)) }},
		// The head falls due while the Take sleeps; Poll takes it (unless
		// the Take wins) and re-arms the timer for the hour-away item.
		{"poll-head",
			func(q *delayqueue.Queue[int]) (delayqueue.Handle, time.Time) {
				due := time.Now().Add(3 * time.Millisecond)
				q.Offer(0, due)
				q.OfferAfter(1, time.Hour)
				return none, due
			},
			func(q *delayqueue.Queue[int], _ delayqueue.Handle) { q.Poll() }},
	}
	rounds := 300
	if testing.Short() {
		rounds = 50
	}
	forEachTimer(t, func(t *testing.T, opts []delayqueue.Option) {
		for _, op := range ops {
			t.Run(op.name, func(t *testing.T) {
				for i := range rounds {
					q := delayqueue.New[int](opts...)
					h, due := op.setup(q)
					ctx, cancel := context.WithCancel(context.Background())
					errc := make(chan error, 1)
					go func() { _, err := q.Take(ctx); errc <- err }()
					for q.Stats().Waiting != 1 && len(errc) == 0 {
						runtime.Gosched()
					}
					for time.Now().Before(due) {
						runtime.Gosched()
					}
					start := make(chan struct{})
					var wg sync.WaitGroup
					wg.Add(2)
					go func() { defer wg.Done(); <-start; cancel() }()
					go func() { defer wg.Done(); <-start; op.change(q, h) }()
					close(start)
					select {
					case err := <-errc:
						if err != nil && !errors.Is(err, context.Canceled) {
							t.Fatalf("round %d: Take = %v, want context.Canceled or an item", i, err)
						}
					case <-time.After(preciseBound):
						t.Fatalf("round %d: cancelled Take still blocked after %v", i, preciseBound)
					}
					wg.Wait()
					q.Close()
				}
			})
		}
	})
}

// TestRegressionPreciseCancelAfterTakeWakesNextLeader pins a bug in the
// common idiom "ctx, cancel := context.WithTimeout(...); Take(ctx); cancel()".
// With WithPreciseTimer the leader's ctx registration outlived its wait; the
// cancel() after a successful Take fired the timerfd and woke the next
// leader for nothing. K items at distinct times should cost <= 2K+2.
func TestRegressionPreciseCancelAfterTakeWakesNextLeader(t *testing.T) {
	for _, precise := range []bool{false, true} {
		opts := []delayqueue.Option{}
		if precise {
			opts = append(opts, delayqueue.WithPreciseTimer())
		}
		q := delayqueue.New[int](opts...)
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
