package delayqueue_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	dq "github.com/dq-go/delayqueue"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Leader/follower: at most one taker waits on the timer and hands off when it
// leaves; head changes re-arm or wake only that leader, so wake-ups stay
// bounded however many takers wait.

func TestEarlierOfferPreemptsLeader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := dq.New[string]()
		start := time.Now()
		offer(t, q, "late", start.Add(time.Hour))
		res := goTake(t.Context(), q)
		synctest.Wait()
		time.Sleep(time.Millisecond)
		offer(t, q, "early", start.Add(10*time.Millisecond))
		r := <-res
		require.NoError(t, r.err)
		assert.Equal(t, "early", r.v)
		assert.Equal(t, 10*time.Millisecond, r.at.Sub(start))
		assert.Equal(t, 1, q.Len())
		q.Drain()
	})
}

func TestLeaderHandOffOnCtxCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := dq.New[string]()
		start := time.Now()
		offer(t, q, "x", start.Add(10*time.Millisecond))

		leaderCtx, cancelLeader := context.WithCancel(t.Context())
		leader := goTake(leaderCtx, q)
		synctest.Wait()
		follower := goTake(t.Context(), q)
		synctest.Wait()
		hasLeader, followers, _ := dq.WaitState(q)
		require.True(t, hasLeader)
		require.Equal(t, 1, followers)

		time.Sleep(5 * time.Millisecond)
		cancelLeader()
		r := <-leader
		assert.ErrorIs(t, r.err, context.Canceled)
		assert.Equal(t, 5*time.Millisecond, r.at.Sub(start))

		r = <-follower
		require.NoError(t, r.err, "the promoted follower must deliver the item")
		assert.Equal(t, "x", r.v)
		assert.Equal(t, 10*time.Millisecond, r.at.Sub(start), "on time")
	})
}

func TestFollowerCancelLeavesLeaderInCharge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := dq.New[int]()
		start := time.Now()
		offer(t, q, 1, start.Add(10*time.Millisecond))
		offer(t, q, 2, start.Add(20*time.Millisecond))
		leader := goTake(t.Context(), q)
		synctest.Wait()
		fctx, fcancel := context.WithCancel(t.Context())
		f1 := goTake(fctx, q)
		synctest.Wait()
		f2 := goTake(t.Context(), q)
		synctest.Wait()
		w := q.Stats().Wakeups
		fcancel()
		r := <-f1
		assert.ErrorIs(t, r.err, context.Canceled)
		synctest.Wait()
		assert.Equal(t, w+1, q.Stats().Wakeups, "only the cancelled follower woke")
		_, followers, _ := dq.WaitState(q)
		assert.Equal(t, 1, followers)

		r = <-leader
		require.NoError(t, r.err)
		assert.Equal(t, 1, r.v)
		assert.Equal(t, 10*time.Millisecond, r.at.Sub(start))
		r = <-f2
		require.NoError(t, r.err)
		assert.Equal(t, 2, r.v)
		assert.Equal(t, 20*time.Millisecond, r.at.Sub(start))
	})
}

// startTakers starts n blocked takers and waits until all are parked.
func startTakers[T any](t *testing.T, ctx context.Context, q *dq.Queue[T], n int) <-chan result[T] {
	ch := make(chan result[T], n)
	for range n {
		go func() {
			v, err := q.Take(ctx)
			ch <- result[T]{v, err, time.Now()}
		}()
	}
	synctest.Wait()
	require.Equal(t, n, q.Stats().Waiting)
	return ch
}

func TestAtMostOneTimerWaiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := dq.New[int]()
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		offer(t, q, 1, time.Now().Add(time.Hour))
		res := startTakers(t, ctx, q, 50)
		hasLeader, followers, _ := dq.WaitState(q)
		assert.True(t, hasLeader)
		assert.Equal(t, 49, followers, "every taker but the leader waits with no timer")
		cancel()
		for range 50 {
			assert.ErrorIs(t, (<-res).err, context.Canceled)
		}
		q.Drain()
	})
}

func TestHerdBoundWakeups(t *testing.T) {
	for _, before := range []bool{false, true} {
		for _, k := range []int{1, 5, 20} {
			t.Run(fmt.Sprintf("K=%d/offeredBeforeTakers=%v", k, before), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					q := dq.New[int]()
					start := time.Now()
					offerAll := func() {
						for i := range k {
							offer(t, q, i, start.Add(time.Duration(i+1)*time.Second))
						}
					}
					if before {
						offerAll()
					}
					ctx, cancel := context.WithCancel(t.Context())
					res := startTakers(t, ctx, q, 50)
					w0 := q.Stats().Wakeups
					if !before {
						offerAll()
					}
					got := make([]int, 0, k)
					for range k {
						r := <-res
						require.NoError(t, r.err)
						got = append(got, r.v)
						assert.Equal(t, time.Duration(r.v+1)*time.Second, r.at.Sub(start))
					}
					synctest.Wait()
					w := q.Stats().Wakeups - w0
					assert.LessOrEqual(t, w, uint64(2*k+2), "K=%d items cost %d wake-ups", k, w)
					assert.True(t, slices.IsSorted(got))

					// Nothing spins while nothing is due.
					time.Sleep(time.Hour)
					synctest.Wait()
					assert.Equal(t, w0+w, q.Stats().Wakeups, "wake-ups with nothing due")

					cancel()
					for range 50 - k {
						assert.ErrorIs(t, (<-res).err, context.Canceled)
					}
				})
			})
		}
	}
}

func TestEachItemFallingDueWakesAtMostOnePlusHandOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := dq.New[int]()
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		start := time.Now()
		for i := range 5 {
			offer(t, q, i, start.Add(time.Duration(i+1)*time.Second))
		}
		res := startTakers(t, ctx, q, 50)
		for i := range 5 {
			w := q.Stats().Wakeups
			r := <-res
			require.NoError(t, r.err)
			assert.Equal(t, i, r.v)
			synctest.Wait()
			// The leader wakes, and it wakes one follower to take over.
			assert.LessOrEqual(t, q.Stats().Wakeups-w, uint64(2), "item %d", i)
		}
		cancel()
		for range 45 {
			<-res
		}
	})
}

func TestOneOfferWakesAtMostOne(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := dq.New[int]()
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		start := time.Now()
		res := startTakers(t, ctx, q, 50) // empty queue: all followers

		step := func(name string, max uint64, f func()) {
			t.Helper()
			w := q.Stats().Wakeups
			f()
			synctest.Wait()
			assert.LessOrEqual(t, q.Stats().Wakeups-w, max, name)
		}
		step("first offer", 1, func() { offer(t, q, 1, start.Add(time.Hour)) })
		step("earlier head", 1, func() { offer(t, q, 2, start.Add(time.Minute)) })
		step("later item", 0, func() { offer(t, q, 3, start.Add(2*time.Hour)) })
		step("later item equal to head", 0, func() { offer(t, q, 4, start.Add(time.Minute)) })
		hasLeader, followers, _ := dq.WaitState(q)
		assert.True(t, hasLeader)
		assert.Equal(t, 49, followers)

		cancel()
		for range 50 {
			assert.ErrorIs(t, (<-res).err, context.Canceled)
		}
		assert.Len(t, q.Drain(), 4)
	})
}

func TestRemoveRescheduleNonHeadWakesNobody(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := dq.New[int]()
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		start := time.Now()
		offer(t, q, 0, start.Add(time.Minute)) // head
		h1 := offer(t, q, 1, start.Add(2*time.Minute))
		h2 := offer(t, q, 2, start.Add(3*time.Minute))
		h3 := offer(t, q, 3, start.Add(4*time.Minute))
		res := startTakers(t, ctx, q, 50)

		w := q.Stats().Wakeups
		_, ok := q.Remove(h1)
		require.True(t, ok)
		require.True(t, q.Reschedule(h2, start.Add(time.Hour)))               // later
		require.True(t, q.Reschedule(h3, start.Add(time.Minute+time.Second))) // earlier, not head
		require.True(t, q.Reschedule(h2, start.Add(time.Minute)))             // ties the head: behind it
		synctest.Wait()
		assert.Equal(t, w, q.Stats().Wakeups, "Remove/Reschedule of non-head items wake nobody")
		v, _, _ := q.Peek()
		assert.Equal(t, 0, v)

		// Rescheduling a non-head item ahead of the head wakes one taker, and
		// the taker takes it on time.
		start2 := time.Now()
		require.True(t, q.Reschedule(h3, start2.Add(time.Second)))
		synctest.Wait()
		assert.LessOrEqual(t, q.Stats().Wakeups-w, uint64(1))
		r := <-res
		require.NoError(t, r.err)
		assert.Equal(t, 3, r.v)
		assert.Equal(t, time.Second, r.at.Sub(start2))

		cancel()
		for range 49 {
			<-res
		}
		assert.Equal(t, []int{0, 2}, q.Drain())
	})
}

func TestRemoveHeadWhileLeaderWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := dq.New[int]()
		start := time.Now()
		h := offer(t, q, 0, start.Add(time.Second))
		offer(t, q, 1, start.Add(2*time.Second))
		res := goTake(t.Context(), q)
		synctest.Wait()
		_, ok := q.Remove(h)
		require.True(t, ok)
		r := <-res
		require.NoError(t, r.err)
		assert.Equal(t, 1, r.v)
		assert.Equal(t, 2*time.Second, r.at.Sub(start))

		// Remove the only item: the taker waits with no timer, then gets
		// a later offer.
		h = offer(t, q, 2, start.Add(time.Hour))
		res = goTake(t.Context(), q)
		synctest.Wait()
		_, ok = q.Remove(h)
		require.True(t, ok)
		time.Sleep(2 * time.Hour)
		synctest.Wait()
		_, done := ready(res)
		require.False(t, done)
		offer(t, q, 3, time.Now().Add(time.Second))
		r = <-res
		require.NoError(t, r.err)
		assert.Equal(t, 3, r.v)
	})
}

func TestRescheduleHeadLaterAndEarlier(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := dq.New[int]()
		start := time.Now()
		h := offer(t, q, 0, start.Add(time.Second))
		res := goTake(t.Context(), q)
		synctest.Wait()
		require.True(t, q.Reschedule(h, start.Add(3*time.Second)))
		time.Sleep(2 * time.Second)
		synctest.Wait()
		_, done := ready(res)
		require.False(t, done, "moved later: not taken at the old deadline")
		require.True(t, q.Reschedule(h, start.Add(2500*time.Millisecond)))
		r := <-res
		require.NoError(t, r.err)
		assert.Equal(t, 2500*time.Millisecond, r.at.Sub(start))
	})
}

// A sleeping leader's timer is re-armed, not the leader woken, when the head
// changes under it: an earlier Offer, a Reschedule of the head either way, a
// Remove of the head, and a Poll that takes the head. Each change costs no
// wake-up, and the leader still wakes exactly when the new head is due.
func TestHeadChangesReArmSleepingLeaderWithoutWakeUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := dq.New[int]()
		start := time.Now()
		h10 := offer(t, q, 10, start.Add(10*time.Second))
		res := goTake(t.Context(), q)
		synctest.Wait()
		w0 := q.Stats().Wakeups

		h5 := offer(t, q, 5, start.Add(5*time.Second)) // earlier head
		synctest.Wait()
		require.True(t, q.Reschedule(h5, start.Add(8*time.Second))) // head later
		synctest.Wait()
		require.True(t, q.Reschedule(h5, start.Add(6*time.Second))) // head earlier
		synctest.Wait()
		_, ok := q.Remove(h5) // head removed
		require.True(t, ok)
		synctest.Wait()
		offer(t, q, 0, start) // due at once, taken by Poll below
		_, ok = q.Poll()
		require.True(t, ok)
		synctest.Wait()
		assert.Equal(t, w0, q.Stats().Wakeups, "head changes woke the leader")

		r := <-res
		require.NoError(t, r.err)
		assert.Equal(t, 10, r.v)
		assert.Equal(t, 10*time.Second, r.at.Sub(start), "leader woke at the wrong time")
		assert.Equal(t, w0+1, q.Stats().Wakeups, "one wake-up: the item falling due")
		_, ok = q.Remove(h10)
		assert.False(t, ok)
	})
}
