package redisq

import (
	"context"
	"slices"
	"sync"
)

// groupCommit joins calls that overlap in time into shared round trips:
// a call made while no batch is in flight is sent at once, alone, so it
// pays what it would without combining; what comes meanwhile waits, in
// order, and goes in the next batch, as many as limit lets into one, when
// a batch in flight returns, or (do, with spread > 1) in a batch of its
// own as soon as spread calls wait and fewer than spread batches are in
// flight. Concurrent callers so share round trips instead of queueing for
// the server one by one, and many of them are not bound by the latency of
// one round trip at a time. Enqueue combining, a partitioned queue's acks
// and a Worker's acks all go through one.
//
// It is used in one of two ways. do: the caller waits for its item's
// batch, and sends it itself when no batch is in flight (or when it is
// promoted to, as the one after the batch in flight); no goroutine of the
// helper's. add: the caller hands the item over and returns, and a
// goroutine of the helper sends what waits; such items may be held back
// (hold) so that the caller's next round trip carries one (takeFirst),
// and flush waits until all have gone.
//
// Invariant: pending holds calls only while a batch is in flight, or while
// held (add); at most one of them is promoted to send (lead), and it is
// the first: it sends the calls after it.
type groupCommit[T any] struct {
	// send sends one batch and records each item's outcome in it (T is a
	// pointer type, or carries one).
	send func(ctx context.Context, batch []T)
	// limit returns how many of the waiting items (at least one) go in one
	// batch; nil: all of them.
	limit func(waiting []T) int
	// spread is, for do, both how many batches may be in flight at once
	// and how many calls must wait for one more to start; 0 or 1: one
	// batch at a time. add sends one batch at a time.
	spread int

	mu      sync.Mutex
	senders int            // guarded by mu: calls sending a batch or promoted to, or drain goroutines
	held    bool           // guarded by mu: add's items wait (hold)
	pending []*gcCall[T]   // guarded by mu: calls waiting to be sent, in arrival order
	idle    chan struct{}  // guarded by mu: closed when no item waits and no batch is in flight (flush)
	drains  sync.WaitGroup // add's sending goroutines
}

// gcCall is one item waiting in a groupCommit.
type gcCall[T any] struct {
	v       T
	lead    bool          // guarded by the helper's mu: promoted to send
	promote chan struct{} // closed when lead is set (do only)
	done    chan struct{} // closed when its batch was sent (do only)
}

// do sends v in a batch and returns once that batch is sent, or returns
// ctx.Err() at once when ctx ends while v waits: v is then normally not
// sent (it is, its outcome unknown to the caller, when a sender took it at
// that moment). A batch that carries other calls' items is sent whatever
// the sender's ctx; one that carries only the sender's runs under it.
func (g *groupCommit[T]) do(ctx context.Context, v T) error {
	c := &gcCall[T]{v: v, done: make(chan struct{})}
	g.mu.Lock()
	if g.senders == 0 {
		g.senders++
		c.lead = true
		g.pending = append(g.pending, c)
		g.mu.Unlock()
		g.sendFrom(ctx)
		return nil
	}
	c.promote = make(chan struct{})
	g.pending = append(g.pending, c)
	g.spreadLocked()
	g.mu.Unlock()
	select {
	case <-c.done:
		return nil
	case <-c.promote:
		g.sendFrom(ctx)
		return nil
	case <-ctx.Done():
	}
	g.leave(c)
	return ctx.Err()
}

// leave takes a waiting call out of pending, if it is still there,
// handing the sender's role on if it had just been promoted.
func (g *groupCommit[T]) leave(c *gcCall[T]) {
	g.mu.Lock()
	defer g.mu.Unlock()
	i := slices.Index(g.pending, c)
	if i < 0 {
		return
	}
	g.pending = slices.Delete(g.pending, i, i+1)
	if c.lead {
		g.handOnLocked()
	}
}

// sendFrom is run by the lead (the first waiting call): it sends the
// lead and the calls after it that fit one batch, then hands the role to
// the next waiting call.
func (g *groupCommit[T]) sendFrom(ctx context.Context) {
	g.mu.Lock()
	batch := g.takeLocked()
	g.spreadLocked()
	g.mu.Unlock()

	if len(batch) > 1 {
		ctx = context.WithoutCancel(ctx)
	}
	g.sendBatch(ctx, batch)

	g.mu.Lock()
	g.handOnLocked()
	g.mu.Unlock()
}

// takeLocked takes the first waiting calls that fit one batch and returns
// them. g.mu must be held.
func (g *groupCommit[T]) takeLocked() []*gcCall[T] {
	n := len(g.pending)
	if g.limit != nil {
		vs := make([]T, n)
		for k := range vs {
			vs[k] = g.pending[k].v
		}
		n = min(max(g.limit(vs), 1), n)
	}
	batch := slices.Clone(g.pending[:n])
	g.pending = slices.Delete(g.pending, 0, n)
	return batch
}

// sendBatch sends batch and marks its calls done.
func (g *groupCommit[T]) sendBatch(ctx context.Context, batch []*gcCall[T]) {
	vs := make([]T, len(batch))
	for k, c := range batch {
		vs[k] = c.v
	}
	g.send(ctx, vs)
	for _, c := range batch {
		if c.done != nil {
			close(c.done)
		}
	}
}

// handOnLocked passes a sender's role to the first waiting call, or gives
// it up when none waits or the first is a lead already (which sends the
// others). g.mu must be held.
func (g *groupCommit[T]) handOnLocked() {
	if len(g.pending) > 0 && !g.pending[0].lead {
		g.promoteLocked()
		return
	}
	g.senders--
	g.idleLocked()
}

// spreadLocked starts one more batch, promoting the first waiting call,
// when spread calls wait for none and fewer than spread batches are in
// flight. g.mu must be held.
func (g *groupCommit[T]) spreadLocked() {
	if g.spread > 1 && g.senders < g.spread && len(g.pending) >= g.spread && !g.pending[0].lead {
		g.senders++
		g.promoteLocked()
	}
}

// promoteLocked makes the first waiting call the lead. g.mu must be held.
func (g *groupCommit[T]) promoteLocked() {
	next := g.pending[0]
	next.lead = true
	close(next.promote)
}

// add hands v over to be sent, in order with the others added, by a
// goroutine of the helper (unless hold holds them).
func (g *groupCommit[T]) add(v T) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.pending = append(g.pending, &gcCall[T]{v: v})
	g.drainLocked()
}

// hold makes add's items wait (true) until takeFirst or hold(false), so
// that the caller's next round trip can carry one.
func (g *groupCommit[T]) hold(on bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.held = on
	g.drainLocked()
}

// takeFirst ends a hold, taking the first item added (ok false when none
// waits): the caller sends it in a round trip of its own; the others go
// now.
func (g *groupCommit[T]) takeFirst() (v T, ok bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.held = false
	if len(g.pending) > 0 {
		v, ok = g.pending[0].v, true
		g.pending = g.pending[1:]
	}
	g.drainLocked()
	return v, ok
}

// drainLocked starts a sending goroutine when items wait, none is held
// back and no batch is in flight. g.mu must be held.
func (g *groupCommit[T]) drainLocked() {
	if g.held || len(g.pending) == 0 || g.senders > 0 {
		g.idleLocked()
		return
	}
	g.senders++
	g.drains.Add(1)
	go func() {
		defer g.drains.Done()
		g.mu.Lock()
		for !g.held && len(g.pending) > 0 {
			batch := g.takeLocked()
			g.mu.Unlock()
			g.sendBatch(context.Background(), batch)
			g.mu.Lock()
		}
		g.senders--
		g.idleLocked()
		g.mu.Unlock()
	}()
}

// idleLocked closes idle once nothing waits or is in flight. g.mu must be
// held.
func (g *groupCommit[T]) idleLocked() {
	if g.idle != nil && g.senders == 0 && (len(g.pending) == 0 || g.held) {
		close(g.idle)
		g.idle = nil
	}
}

// flush ends any hold and returns once every item added has been sent
// and the sending goroutines have returned.
func (g *groupCommit[T]) flush() {
	g.mu.Lock()
	g.held = false
	var idle chan struct{}
	if g.senders > 0 || len(g.pending) > 0 {
		idle = make(chan struct{})
		g.idle = idle
		g.drainLocked()
	}
	g.mu.Unlock()
	if idle != nil {
		<-idle
	}
	g.drains.Wait()
}
