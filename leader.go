package delayqueue

import (
	"context"
	"math"
	"time"
)

// This file holds the Leader-Follower hand-off between blocked takers.
//
// At most one blocked taker, the leader, sleeps on a timer for exactly the
// head's remaining delay. Every other blocked taker is a follower: it waits on
// its own channel, in a FIFO list, with no timer. When the leader leaves (it
// took an item, its ctx ended, or the queue closed) it promotes the first
// follower, if items remain, by making it the leader and waking it. The
// timer is armed under the queue's mutex, so an Offer that creates a new head
// re-arms it without waking the leader; with no leader, it promotes one
// follower. So an Offer wakes at most one taker, an item falling due wakes at
// most one (plus the hand-off to the next leader), and nothing spins while
// nothing is due.
//
//	Offer ──new head──▶ leader ──timer(head.at−now)──▶ takes head
//	                      ▲                               │
//	                      └──── promote first follower ◀──┘
//	followers: [w1] → [w2] → [w3]   (no timers; each parked on w.ready)

// waiter is one goroutine blocked in Take, TakeBatch or Put.
//
// A token in ready means "look at the queue again". Tokens are sent only
// under Queue.mu, and only to the leader or to a waiter that the sender
// removed from its list in the same critical section, so once a waiter is
// neither listed nor the leader no one sends to it and it can be reused.
type waiter struct {
	ready      chan struct{} // capacity 1
	prev, next *waiter       // links in a waitList
	list       *waitList     // the list w is on, nil if none
}

// signal leaves a token in w.ready unless one is already there.
func (w *waiter) signal() {
	select {
	case w.ready <- struct{}{}:
	default:
	}
}

// consume removes a pending token, if any.
func (w *waiter) consume() {
	select {
	case <-w.ready:
	default:
	}
}

// waitList is an intrusive FIFO list of waiters: pushing and removing
// allocate nothing, and a waiter whose ctx ends can leave from the middle.
type waitList struct {
	head, tail *waiter
	n          int
}

func (l *waitList) pushBack(w *waiter) {
	w.list, w.prev, w.next = l, l.tail, nil
	if l.tail != nil {
		l.tail.next = w
	} else {
		l.head = w
	}
	l.tail = w
	l.n++
}

func (l *waitList) remove(w *waiter) {
	if w.prev != nil {
		w.prev.next = w.next
	} else {
		l.head = w.next
	}
	if w.next != nil {
		w.next.prev = w.prev
	} else {
		l.tail = w.prev
	}
	w.list, w.prev, w.next = nil, nil, nil
	l.n--
}

// popFront removes and returns the first waiter, or nil if l is empty.
func (l *waitList) popFront() *waiter {
	w := l.head
	if w != nil {
		l.remove(w)
	}
	return w
}

// leaderTimer is what the leader sleeps on. The default is the runtime's
// time.Timer; WithPreciseTimer swaps in a high-resolution one.
//
// The timer is armed under Queue.mu, by the leader before it sleeps and by
// whoever changes the head while it sleeps, so a new head costs a re-arm,
// not a wake-up. Every wait is preceded by an arm or disarm under Queue.mu,
// and both discard any expiry not yet received, so a stale expiry can never
// end a later wait.
type leaderTimer interface {
	// arm makes the timer expire d from now (at once if d <= 0), replacing
	// any earlier setting. Called under Queue.mu.
	arm(d time.Duration)
	// disarm stops the timer from expiring. Called under Queue.mu.
	disarm()
	// wait blocks until the timer expires, a token arrives on ready, or ctx
	// is done. It returns nil or ctx.Err(); ctx.Err() at least whenever ctx
	// ended the wait (the precise timer also returns it when ctx ended just
	// as the timer expired). Only the leader calls it, without holding
	// Queue.mu, after arm or disarm.
	wait(ctx context.Context, ready <-chan struct{}) error
	// wake makes a wait in progress return soon. It is called under
	// Queue.mu right after a token is sent to the leader's ready channel,
	// and by rearmLocked after an arm that may have undone an earlier wake
	// or a cancellation's early expiry.
	wake()
	// close releases the timer's resources; it is called once, by Close.
	close()
}

// runtimeTimer is the default leaderTimer: one time.Timer per queue, reset
// for each arming. Since Go 1.23, Stop and Reset guarantee that no expiry
// from before the call is received after it, which is what makes a timer
// shared by successive leaders and re-armed by other goroutines safe.
//
// The timer is created stopped by newRuntimeTimer, in New, so it belongs to
// the synctest bubble (or the absence of one) where the queue was created,
// like the queue's other resources.
type runtimeTimer struct {
	t *time.Timer
}

func newRuntimeTimer() *runtimeTimer {
	t := time.NewTimer(time.Duration(math.MaxInt64))
	t.Stop()
	return &runtimeTimer{t: t}
}

func (rt *runtimeTimer) arm(d time.Duration) {
	if d <= 0 {
		resetDue(rt.t)
		return
	}
	rt.t.Reset(d)
}
func (rt *runtimeTimer) disarm() { rt.t.Stop() }

func (rt *runtimeTimer) wait(ctx context.Context, ready <-chan struct{}) error {
	select {
	case <-rt.t.C:
		return nil
	case <-ready:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (*runtimeTimer) wake()  {}
func (*runtimeTimer) close() {}

// getWaiterLocked returns a waiter from the queue's pool, or a new one.
func (q *Queue[T]) getWaiterLocked() *waiter {
	if n := len(q.waiterPool); n > 0 {
		w := q.waiterPool[n-1]
		q.waiterPool[n-1] = nil
		q.waiterPool = q.waiterPool[:n-1]
		return w
	}
	return &waiter{ready: make(chan struct{}, 1)}
}

// awaitLocked blocks the taker w until it should look at the queue again.
// If there is no leader, w becomes the leader: it arms the timer for the
// head (or leaves it disarmed while the queue is empty) and sleeps on it. A
// leader stays leader across calls until leaveLocked. Otherwise w waits as a
// follower, with no timer, until promoted or until Close.
// It is called and returns with q.mu held, and returns ctx.Err() if the wait
// ended because ctx was done; the caller must then call leaveLocked.
func (q *Queue[T]) awaitLocked(ctx context.Context, w *waiter) error {
	if q.leader == nil {
		q.leader = w
	}
	q.waiting++
	var err error
	if q.leader == w {
		q.armLocked()
		q.leaderAsleep, q.leaderDone = true, ctx.Done()
		q.mu.Unlock()
		err = q.timer.wait(ctx, w.ready)
		q.mu.Lock()
		q.leaderAsleep, q.leaderDone = false, nil
	} else {
		q.followers.pushBack(w)
		q.mu.Unlock()
		select {
		case <-w.ready:
		case <-ctx.Done():
			err = ctx.Err()
		}
		q.mu.Lock()
	}
	w.consume()
	q.waiting--
	q.wakeups++
	return err
}

// armLocked sets the leader's timer for the head's remaining delay, or
// disarms it while the queue is empty.
func (q *Queue[T]) armLocked() {
	if q.heap.len() == 0 {
		q.timer.disarm()
		return
	}
	at, now := q.heap.head().at, q.readClockLocked()
	d := at - now // may overflow: at and now can be anywhere in int64
	if at <= now {
		d = 0
	} else if d < 0 {
		d = math.MaxInt64
	}
	q.timer.arm(time.Duration(d))
}

// leaveLocked is called when taker w stops taking (it got its items, its
// ctx ended, or the queue closed). A leaving leader promotes a follower so
// the remaining items keep someone waiting for them; a follower that was
// still listed just leaves the list. w goes back to the pool.
func (q *Queue[T]) leaveLocked(w *waiter) {
	if w == nil {
		return
	}
	if q.leader == w {
		// The timer may stay armed: the next arm or disarm discards its
		// expiry, and until then nobody receives it.
		q.leader = nil
		q.promoteLocked()
	} else if w.list != nil {
		w.list.remove(w)
	}
	w.consume()
	q.waiterPool = append(q.waiterPool, w)
}

// promoteLocked makes the first follower the leader and wakes it, if there
// are items and no leader.
func (q *Queue[T]) promoteLocked() {
	if q.leader != nil || q.heap.len() == 0 {
		return
	}
	if w := q.followers.popFront(); w != nil {
		q.leader = w
		w.signal()
	}
}

// headEarlierLocked is called when an Offer or Reschedule made the head
// earlier. A sleeping leader has its timer re-armed and is not woken; with
// no leader, one follower is promoted. So it wakes at most one taker.
func (q *Queue[T]) headEarlierLocked() {
	if q.leader == nil {
		q.promoteLocked()
		return
	}
	q.rearmLocked()
}

// rearmLocked re-arms a sleeping leader's timer after the head changed, so
// that it neither wakes early for an item that left nor late for one that
// arrived. A leader that is awake looks at the head itself.
//
// Arming replaces the timer's setting, and for the precise timer that
// discards an early expiry that wake or the leader's cancelled ctx set to
// end the wait. So if the wait should end (a token is on ready, or the ctx is
// done) the timer is made to expire at once again. The ctx is checked after
// arming: if it was not done then, its cancellation, and so its early
// expiry, comes after this arming and is not discarded.
func (q *Queue[T]) rearmLocked() {
	if q.leaderAsleep { // the check inlines; most calls find no sleeper
		q.rearmSleeperLocked()
	}
}

// rearmSleeperLocked is rearmLocked for a sleeping leader.
func (q *Queue[T]) rearmSleeperLocked() {
	q.armLocked()
	if len(q.leader.ready) > 0 || isDone(q.leaderDone) {
		q.timer.wake()
	}
}

// isDone reports whether done is closed; a nil done never is.
func isDone(done <-chan struct{}) bool {
	select {
	case <-done:
		return true
	default:
		return false
	}
}

// spaceFreedLocked wakes up to n blocked Puts after n items left a bounded
// queue. A woken Put that finds the queue full again waits again.
func (q *Queue[T]) spaceFreedLocked(n int) {
	for ; n > 0 && q.putters.n > 0; n-- {
		q.putters.popFront().signal()
	}
}

// wakeAllLocked wakes every blocked taker and Put; used by Close.
func (q *Queue[T]) wakeAllLocked() {
	if q.leader != nil {
		q.leader.signal()
		q.timer.wake()
	}
	for w := q.followers.popFront(); w != nil; w = q.followers.popFront() {
		w.signal()
	}
	for w := q.putters.popFront(); w != nil; w = q.putters.popFront() {
		w.signal()
	}
}
