package redisq

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"
)

// partHold bounds how long the process keeps what it claimed for its
// callers and they did not take: an item claimed and not handed out is
// released (Message.Release, no attempt counted) after partHold, or a
// quarter of its lease if that is shorter, and the partitions' waits end
// partHold after the last caller stopped waiting. It is the most a caller
// of another process may wait for an item this process claimed and did not
// use, and the least lease a Take hands out is three quarters of it.
const partHold = 500 * time.Millisecond

// partClaimMax bounds a claim made to keep a partition's items in the
// merge (one claim script's worth).
const partClaimMax = 100

// partSettle bounds one release or combined ack, which run on a context of
// their own so that they finish after the caller's has ended.
const partSettle = 10 * time.Second

// Take blocks until an item of any partition is due and leased to the
// caller, ctx is done, or the queue is closed, and returns it. Outcomes as
// Queue.Take: the message; ctx.Err(); ErrClosed after Close; or a Redis
// error of a partition (that one caller gets it, the others keep waiting,
// and the partition is claimed again after a pause of 10ms, doubling up to
// 1s).
//
// The process takes from every partition at once, one goroutine each, and
// merges what they claim in due order; each partition delivers in its own
// due order, FIFO among equal due times, never early, and across
// partitions an item may come after one due later only in the cases that
// docs/redisq-design.md lists (a claim of its partition under way, an item
// that became due while its partition waited, clocks of the masters that
// differ). An item claimed and not taken by a caller within 500ms (or a
// quarter of its lease) is handed back (Message.Release, no attempt
// counted), so a held item comes with at least three quarters of its
// lease; what the process holds when no caller has waited for 500ms, and
// at Close, is handed back too. An idle process waiting on P partitions
// costs P times an idle Queue, and holds P connections of the wait
// client: size the pool for them plus the process's other calls. How it
// works, and what it costs: docs/redisq-design.md#partitioned-take.
func (p *Partitioned) Take(ctx context.Context) (*Message, error) {
	ms, err := p.tk.take(ctx, 1)
	if err != nil {
		return nil, err
	}
	return ms[0], nil
}

// TakeBatch is Take for up to n (1..MaxBatch) items: it blocks until at
// least one is due and returns the held items, earliest due first, up to
// n, as soon as one partition's claim brings any (the items of partitions
// whose claims come back later go to the next callers). Outcomes as Take; a
// bad n returns an error at once.
func (p *Partitioned) TakeBatch(ctx context.Context, n int) ([]*Message, error) {
	if n < 1 || n > MaxBatch {
		return nil, fmt.Errorf("redisq: batch size %d not in 1..%d", n, MaxBatch)
	}
	return p.tk.take(ctx, n)
}

// AckTake acks done and takes the next item, as Queue.AckTake: it returns
// ErrLeaseLost when done's lease is lost (then nothing is taken), ErrClosed
// after Close once done is acked, and otherwise what Take returns; any
// other error may leave done unacked (done.Ack settles it). The ack is not
// sent in the claim's script (the next item may come from another
// partition): the acks of every AckTake of one partition that arrive while
// one is in flight are sent together, as one AckMany, when it returns. A
// nil done is a plain Take; a done of another queue is acked on its own.
func (p *Partitioned) AckTake(ctx context.Context, done *Message) (*Message, error) {
	if done != nil {
		if err := p.ack(ctx, done); err != nil {
			return nil, err
		}
	}
	return p.Take(ctx)
}

// AckMany is Queue.AckMany across partitions: the messages of each
// partition are acked by its AckMany, the partitions concurrently (one
// round trip each, at the same time). It returns one error per message,
// each with Ack's meaning; a nil element, or a message of no partition of
// this queue, gets an error of its own and the others are acked.
func (p *Partitioned) AckMany(ctx context.Context, msgs []*Message) []error {
	errs := make([]error, len(msgs))
	byPart := make([][]int, len(p.parts))
	for i, m := range msgs {
		k := p.PartitionOfMessage(m)
		switch {
		case m == nil:
			errs[i] = fmt.Errorf("redisq: AckMany: message %d is nil", i)
		case k < 0:
			errs[i] = fmt.Errorf("redisq: AckMany: message %q is from queue %q, not a partition of %q", m.ID, m.QueueName(), p.name)
		default:
			byPart[k] = append(byPart[k], i)
		}
	}
	_ = p.each(func(k int, q *Queue) error {
		if len(byPart[k]) == 0 {
			return nil
		}
		ms := make([]*Message, len(byPart[k]))
		for j, i := range byPart[k] {
			ms[j] = msgs[i]
		}
		for j, err := range q.AckMany(ctx, ms) {
			errs[byPart[k][j]] = err
		}
		return nil
	})
	return errs
}

// taker hands the items of a Partitioned's partitions to the process's
// callers (see Partitioned.Take).
type taker struct {
	parts []*Queue
	log   *slog.Logger

	mu      sync.Mutex
	ps      []pumpState        // guarded by mu
	held    heldHeap           // guarded by mu: claimed, not handed out
	expiry  []*heldMsg         // guarded by mu: held items in the order they came (handed out ones are skipped)
	seq     uint64             // guarded by mu: arrival order of held items
	waiters []*waiter          // guarded by mu: callers waiting, in arrival order
	want    int                // guarded by mu: items the waiters want
	front   time.Time          // guarded by mu: due time of the last item handed out in the active period
	active  bool               // guarded by mu: callers take (a caller waited within partHold)
	run     context.Context    // guarded by mu: the active period's, which its claims run under
	stopRun context.CancelFunc // guarded by mu: ends the partitions' waits of the active period
	started bool               // guarded by mu
	closed  bool               // guarded by mu
	// watchers are signalled when items are held that no caller took (a
	// Worker over several queues takes them when it has a handler).
	watchers []chan struct{} // guarded by mu
	// Made once by startLocked, read-only after:
	linger *time.Timer     // fires partHold after the last caller stopped waiting (Reset/Stop under mu)
	expire *time.Timer     // fires at the earliest held item's expiry (Reset/Stop under mu)
	kick   []chan struct{} // per partition (capacity 1): a claim was assigned
	quit   chan struct{}   // closed by close: the pumps return
	wg     sync.WaitGroup  // pumps and releases
}

// pumpState is one partition's taker, as the dispatcher sees it; guarded
// by the taker's mu.
type pumpState struct {
	running   bool            // a claim is assigned or under way
	n         int             // its size
	ctx       context.Context // its context (the active period's)
	more      bool            // the last claim returned all it asked for (or there was none)
	last      time.Time       // due time of the latest item of the last claim (zero: none)
	held      int             // items of this partition held
	handed    int             // items handed out since the last claim started
	releasing int             // items being released
	fails     int             // claims failed in a row
	retryAt   time.Time       // no claim before (after a failure)
	retry     *time.Timer     // re-dispatches at retryAt
}

// waiter is a caller waiting for n items.
type waiter struct {
	n     int
	got   []*heldMsg    // guarded by the taker's mu until ready is closed
	err   error         // guarded by the taker's mu until ready is closed
	ready chan struct{} // closed when got or err is set
}

// heldMsg is a claimed message that no caller has yet; its fields after
// m, part and seq are guarded by the taker's mu.
type heldMsg struct {
	m       *Message
	part    int
	seq     uint64
	expires time.Time // released then unless handed out
	index   int       // in held
	gone    bool      // handed out or released
}

// heldHeap orders held messages by due time, then arrival.
type heldHeap []*heldMsg

func (h heldHeap) Len() int { return len(h) }
func (h heldHeap) Less(i, j int) bool {
	if !h[i].m.Due.Equal(h[j].m.Due) {
		return h[i].m.Due.Before(h[j].m.Due)
	}
	return h[i].seq < h[j].seq
}
func (h heldHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *heldHeap) Push(x any) {
	m := x.(*heldMsg)
	m.index = len(*h)
	*h = append(*h, m)
}
func (h *heldHeap) Pop() any {
	old := *h
	m := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return m
}

func newTaker(parts []*Queue, log *slog.Logger) *taker {
	t := &taker{parts: parts, log: log, ps: make([]pumpState, len(parts))}
	for i := range t.ps {
		t.ps[i].more = true
	}
	return t
}

// startLocked starts the partitions' takers and the timers.
func (t *taker) startLocked() {
	if t.started {
		return
	}
	t.started = true
	t.quit = make(chan struct{})
	t.kick = make([]chan struct{}, len(t.parts))
	t.linger = time.AfterFunc(time.Hour, t.lingered)
	t.linger.Stop()
	t.expire = time.AfterFunc(time.Hour, t.expired)
	t.expire.Stop()
	for i := range t.parts {
		t.kick[i] = make(chan struct{}, 1)
		t.wg.Add(1)
		go t.pump(i)
	}
}

// take waits until it can hand the caller 1..n items.
func (t *taker) take(ctx context.Context, n int) ([]*Message, error) {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil, ErrClosed
	}
	t.startLocked()
	if !t.active {
		t.active, t.front = true, time.Time{}
		t.run, t.stopRun = context.WithCancel(context.Background())
		for i := range t.ps {
			// What the last active period learnt may be stale.
			t.ps[i].more, t.ps[i].last = true, time.Time{}
		}
	}
	t.linger.Stop()
	w := &waiter{n: n, ready: make(chan struct{})}
	t.waiters = append(t.waiters, w)
	t.want += n
	t.serveLocked()
	t.dispatchLocked()
	t.mu.Unlock()

	select {
	case <-w.ready:
	case <-ctx.Done():
		t.mu.Lock()
		select {
		case <-w.ready:
			// Served as ctx ended: give the items to the next caller.
			t.putBackLocked(w)
			t.notifyHeldLocked()
		default:
			for i, o := range t.waiters {
				if o == w {
					t.waiters = append(t.waiters[:i], t.waiters[i+1:]...)
					t.want -= w.n
					break
				}
			}
			t.lingerLocked()
		}
		var rel []*Message
		if t.closed && w.err == nil {
			// Close came after this caller was served: the releases of
			// Close may be over, so release its items here.
			for _, h := range w.got {
				rel = append(rel, h.m)
			}
			w.got = nil
		}
		t.serveLocked()
		t.dispatchLocked()
		t.mu.Unlock()
		if len(rel) > 0 {
			c, cancel := context.WithTimeout(context.Background(), partSettle)
			defer cancel()
			for _, m := range rel {
				_ = m.Release(c)
			}
		}
		return nil, ctx.Err()
	}
	if w.err != nil {
		return nil, w.err
	}
	ms := make([]*Message, len(w.got))
	for i, h := range w.got {
		ms[i] = h.m
	}
	return ms, nil
}

// putBackLocked returns a served waiter's items to the held ones, where
// they keep their place.
func (t *taker) putBackLocked(w *waiter) {
	if w.err != nil || t.closed {
		return
	}
	for _, h := range w.got {
		if !t.active {
			t.releaseLocked([]*Message{h.m}, h.part)
			continue
		}
		c := &heldMsg{m: h.m, part: h.part, seq: h.seq, expires: h.expires}
		heap.Push(&t.held, c)
		t.expiry = append(t.expiry, c)
		t.ps[h.part].held++
		t.ps[h.part].handed--
	}
	t.armExpiryLocked()
}

// serveLocked hands held items to the waiters in arrival order, earliest
// due first.
func (t *taker) serveLocked() {
	served := false
	for len(t.waiters) > 0 && t.held.Len() > 0 {
		w := t.waiters[0]
		t.waiters[0] = nil
		t.waiters = t.waiters[1:]
		t.want -= w.n
		for range min(w.n, t.held.Len()) {
			h := heap.Pop(&t.held).(*heldMsg)
			h.gone = true
			t.ps[h.part].held--
			t.ps[h.part].handed++
			t.front = h.m.Due
			w.got = append(w.got, h)
		}
		close(w.ready)
		served = true
	}
	for len(t.expiry) > 0 && t.expiry[0].gone {
		t.expiry[0] = nil
		t.expiry = t.expiry[1:]
	}
	if served {
		t.lingerLocked()
	}
}

// lingerLocked starts the partHold countdown to the end of the active
// period when no caller waits any more.
func (t *taker) lingerLocked() {
	if t.want == 0 && t.active && !t.closed {
		t.linger.Reset(partHold)
	}
}

// dispatchLocked assigns claims to the idle partition takers (see Take).
func (t *taker) dispatchLocked() {
	if t.closed || !t.active {
		return
	}
	now := time.Now()
	var idle []int
	for i := range t.ps {
		ps := &t.ps[i]
		if !ps.running && ps.releasing == 0 && !now.Before(ps.retryAt) {
			idle = append(idle, i)
		}
	}
	if len(idle) == 0 {
		return
	}
	if d := t.want - t.held.Len(); d > 0 {
		// Callers wait for more than is held: every idle partition claims
		// its share, so the first to have items serves them.
		share := min((d+len(idle)-1)/len(idle), MaxBatch)
		for _, i := range idle {
			t.startLocked1(i, share)
		}
		return
	}
	// The merge's front: the earliest held item, or, with none held, the
	// last one handed out.
	front := t.front
	if t.held.Len() > 0 {
		front = t.held[0].m.Due
	} else if front.IsZero() {
		return // nothing handed out or held yet: nothing to merge with
	}
	for _, i := range idle {
		ps := &t.ps[i]
		switch {
		case !ps.more && t.held.Len() > 0:
			// Nothing more was due: wait for its next due item, which may
			// come before the held ones.
			t.startLocked1(i, 1)
		case ps.more && ps.held == 0 && !ps.last.After(front):
			// Its next items may be due before the front: claim them.
			t.startLocked1(i, min(max(2*ps.handed, 1), partClaimMax))
		}
	}
}

func (t *taker) startLocked1(i, n int) {
	ps := &t.ps[i]
	ps.running, ps.n, ps.ctx, ps.handed = true, n, t.run, 0
	select {
	case t.kick[i] <- struct{}{}:
	default:
	}
}

// pump is partition i's taker: it runs the claims assigned to it.
func (t *taker) pump(i int) {
	defer t.wg.Done()
	for {
		select {
		case <-t.kick[i]:
		case <-t.quit:
			return
		}
		t.mu.Lock()
		ps := &t.ps[i]
		if !ps.running {
			t.mu.Unlock()
			continue
		}
		n, ctx := ps.n, ps.ctx
		t.mu.Unlock()
		ms, err := t.parts[i].TakeBatch(ctx, n)
		t.claimed(i, n, ctx, ms, err)
	}
}

// claimed records what partition i's claim of n items under ctx returned.
func (t *taker) claimed(i, n int, ctx context.Context, ms []*Message, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	ps := &t.ps[i]
	ps.running = false
	switch {
	case len(ms) > 0:
		ps.fails, ps.retryAt = 0, time.Time{}
		ps.more = len(ms) >= n
		ps.last = ms[0].Due
		for _, m := range ms[1:] {
			if m.Due.After(ps.last) {
				ps.last = m.Due
			}
		}
		if t.closed || !t.active {
			t.releaseLocked(ms, i)
		} else {
			now := time.Now()
			for _, m := range ms {
				hold := min(partHold, m.Deadline.Sub(m.ClaimedAt)/4)
				t.seq++
				h := &heldMsg{m: m, part: i, seq: t.seq, expires: now.Add(hold)}
				heap.Push(&t.held, h)
				t.expiry = append(t.expiry, h)
				ps.held++
			}
			t.armExpiryLocked()
		}
	case err == nil, ctx.Err() != nil:
		// Nothing, or the wait was ended (the callers left, or Close).
	default:
		ps.fails++
		d := min(10*time.Millisecond<<min(ps.fails-1, 7), time.Second)
		ps.retryAt = time.Now().Add(d)
		if ps.retry == nil {
			ps.retry = time.AfterFunc(d, func() {
				t.mu.Lock()
				defer t.mu.Unlock()
				t.dispatchLocked()
			})
		} else {
			ps.retry.Reset(d)
		}
		if len(t.waiters) > 0 {
			w := t.waiters[0]
			t.waiters = t.waiters[1:]
			t.want -= w.n
			w.err = fmt.Errorf("redisq: partition %q: %w", t.parts[i].Name(), err)
			close(w.ready)
			t.lingerLocked()
		} else if ps.fails&(ps.fails-1) == 0 {
			t.log.Warn("redisq: claiming a partition failed; retrying", "queue", t.parts[i].Name(), "err", err, "failures", ps.fails)
		}
	}
	t.serveLocked()
	t.notifyHeldLocked()
	t.dispatchLocked()
}

// watchHeld returns a channel (capacity 1) signalled whenever items are
// held that no caller took, and the function that stops the signals.
func (t *taker) watchHeld() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	t.mu.Lock()
	t.watchers = append(t.watchers, ch)
	t.mu.Unlock()
	return ch, func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		t.watchers = slices.DeleteFunc(t.watchers, func(c chan struct{}) bool { return c == ch })
	}
}

// heldLen returns how many claimed items no caller has taken yet.
func (t *taker) heldLen() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.held.Len()
}

// notifyHeldLocked signals the watchers if items are held. t.mu must be
// held.
func (t *taker) notifyHeldLocked() {
	if t.held.Len() == 0 {
		return
	}
	for _, ch := range t.watchers {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// armExpiryLocked sets the expiry timer for the first held item in arrival
// order (items come with the same lease, so nearly in order of expiry).
func (t *taker) armExpiryLocked() {
	for len(t.expiry) > 0 && t.expiry[0].gone {
		t.expiry[0] = nil
		t.expiry = t.expiry[1:]
	}
	if len(t.expiry) > 0 && !t.closed {
		t.expire.Reset(time.Until(t.expiry[0].expires))
	}
}

// expired releases the held items whose time is up.
func (t *taker) expired() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return
	}
	now := time.Now()
	for len(t.expiry) > 0 {
		h := t.expiry[0]
		if !h.gone && h.expires.After(now) {
			break
		}
		t.expiry[0] = nil
		t.expiry = t.expiry[1:]
		if !h.gone {
			heap.Remove(&t.held, h.index)
			h.gone = true
			t.ps[h.part].held--
			t.releaseLocked([]*Message{h.m}, h.part)
		}
	}
	t.armExpiryLocked()
	t.dispatchLocked()
}

// lingered ends the active period when no caller has waited for partHold:
// the partitions' waits end and held items are released.
func (t *taker) lingered() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed || !t.active || t.want > 0 {
		return
	}
	t.active = false
	t.stopRun()
	t.releaseHeldLocked()
}

// releaseHeldLocked releases every held item.
func (t *taker) releaseHeldLocked() {
	for t.held.Len() > 0 {
		h := heap.Pop(&t.held).(*heldMsg)
		h.gone = true
		t.ps[h.part].held--
		t.releaseLocked([]*Message{h.m}, h.part)
	}
	t.expiry = nil
	t.expire.Stop()
}

// releaseLocked hands ms (claimed from partition part) back to their
// schedule, no attempt counted, in a goroutine of its own; the partition
// claims nothing until they are back. The partition may have items due
// from their due times on again.
func (t *taker) releaseLocked(ms []*Message, part int) {
	ps := &t.ps[part]
	ps.releasing += len(ms)
	ps.more = true
	for _, m := range ms {
		if m.Due.Before(ps.last) {
			ps.last = m.Due
		}
	}
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), partSettle)
		defer cancel()
		for _, m := range ms {
			if err := m.Release(ctx); err != nil && !errors.Is(err, ErrLeaseLost) {
				t.log.Warn("redisq: releasing a claimed message failed; it is redelivered after its lease",
					"queue", m.QueueName(), "id", m.ID, "err", err)
			}
		}
		t.mu.Lock()
		defer t.mu.Unlock()
		t.ps[part].releasing -= len(ms)
		t.dispatchLocked()
	}()
}

// close ends taking (see Partitioned.Close) and waits for the takers and
// releases.
func (t *taker) close() {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		t.wg.Wait()
		return
	}
	t.closed = true
	for _, w := range t.waiters {
		w.err = ErrClosed
		close(w.ready)
	}
	t.waiters, t.want = nil, 0
	if t.started {
		if t.stopRun != nil {
			t.stopRun()
		}
		t.linger.Stop()
		for i := range t.ps {
			if r := t.ps[i].retry; r != nil {
				r.Stop()
			}
		}
		t.releaseHeldLocked()
		close(t.quit)
	}
	t.mu.Unlock()
	t.wg.Wait()
}

// ack acks m, combined with the other acks of its partition (see
// AckTake): acks that arrive while one of the partition's is in flight go
// together in the next (group commit).
func (p *Partitioned) ack(ctx context.Context, m *Message) error {
	i := p.PartitionOfMessage(m)
	if i < 0 {
		return m.Ack(ctx)
	}
	r := &ackReq{m: m}
	if err := p.acks[i].do(ctx, r); err != nil {
		return err
	}
	return r.err
}

// ackReq is one combined ack and, once sent, its outcome.
type ackReq struct {
	m   *Message
	err error
}

// newAcks returns the ack combiner of partition q: one Ack (EVALSHA) for
// one message, else one AckMany.
func newAcks(q *Queue) *groupCommit[*ackReq] {
	return &groupCommit[*ackReq]{send: func(ctx context.Context, batch []*ackReq) {
		ctx, cancel := context.WithTimeout(ctx, partSettle)
		defer cancel()
		if len(batch) == 1 {
			batch[0].err = batch[0].m.Ack(ctx)
			return
		}
		ms := make([]*Message, len(batch))
		for i, r := range batch {
			ms[i] = r.m
		}
		for i, err := range q.AckMany(ctx, ms) {
			batch[i].err = err
		}
	}}
}
