package redisq

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dq-go/delayqueue/redisq/internal/rdb"
	"github.com/redis/go-redis/v9"
)

// Sentinel errors. Compare with errors.Is.
var (
	// ErrClosed is returned by Enqueue, Take and the other queue operations
	// after Close, and by a Take that Close interrupted.
	ErrClosed = errors.New("redisq: queue closed")
	// ErrDuplicate is returned by Enqueue when an item with that id exists in
	// any state (scheduled, in flight or dead). Nothing is changed. A retried
	// Enqueue whose first attempt reached Redis also gets ErrDuplicate.
	ErrDuplicate = errors.New("redisq: duplicate id")
	// ErrUniqueHeld is returned by an enqueue of an item whose Job has a
	// UniqueKey when an enqueue of the same key took its window less than
	// UniqueFor ago (see Unique). Nothing is changed. It is an
	// ErrDuplicate: errors.Is(err, ErrDuplicate) holds.
	ErrUniqueHeld = fmt.Errorf("%w: unique key held", ErrDuplicate)
	// ErrLeaseLost is returned by Message.Ack/Nack/Extend when the message's
	// lease expired (by the Redis clock) or was superseded; nothing is changed.
	ErrLeaseLost = errors.New("redisq: lease lost")
	// ErrNotFound is returned by Cancel, Reschedule, Get and the dead-letter
	// calls for an unknown id (never enqueued, acknowledged, or cancelled).
	ErrNotFound = errors.New("redisq: not found")
	// ErrInFlight is returned by Reschedule and Schedule when the item is
	// leased by a consumer; nothing is changed. (Cancel of a leased item
	// succeeds with CancelMarked instead.)
	ErrInFlight = errors.New("redisq: in flight")
	// ErrEvictionPolicy is wrapped by New's error when the server may evict
	// keys (maxmemory-policy is not noeviction) and EvictionFail is in effect.
	ErrEvictionPolicy = errors.New("redisq: maxmemory-policy is not noeviction")
)

// localWaitMax is the longest wait for a known due time that Take sleeps
// locally instead of blocking in BZPOPMIN.
const localWaitMax = 25 * time.Millisecond

// MaxBatch is the largest n TakeBatch accepts. One claim script leases at
// most 100 items; TakeBatch runs as many as it needs for n.
const MaxBatch = 1000

// Queue is a durable delay queue stored in Redis under the hash tag
// {dq:NAME}. Any number of Queue values, in any number of processes, may share
// one name. All methods are safe for concurrent use.
type Queue struct {
	client redis.UniversalClient
	wait   redis.UniversalClient
	name   string
	opt    options
	wpref  string // prefix of this Queue value's private keys
	subsec time.Duration
	db     *rdb.Runner // the queue's scripts
	// onNewLife, when set (a partition's Partitioned), runs after
	// register when a call starts the queue's sequence (see unwrapLife).
	onNewLife func(context.Context)

	waitSeq   atomic.Uint64             // numbers this value's private keys
	enq       *groupCommit[*enqueueReq] // Enqueue combining
	timer     timerState
	closeCtx  context.Context
	closeFunc context.CancelFunc
	closeOnce sync.Once
	active    sync.WaitGroup
	mu        sync.Mutex // guards active.Add against Close's Wait
	closed    bool

	regMu sync.Mutex
	// registered: the recurring registrations this Queue value's Register
	// calls stored or confirmed; its keepers record them as seen
	// (Registration.Seen). Guarded by regMu.
	registered map[string]bool
}

// New returns a Queue named name on client. name must be non-empty and must
// not contain '{' or '}'. New sends CONFIG GET maxmemory-policy (blocking for
// one round trip under ctx) unless WithEvictionCheck(EvictionIgnore) is given;
// when CONFIG is unavailable (managed Redis) the check is skipped with a log
// note. Then it runs one script that upgrades the queue's data if an earlier
// version stored it (the sequence key's type), and adds name to the
// registry RegistryKey (one SADD; best effort: a user that may not write
// still gets its Queue), so that ListQueues finds the queue. It returns an error for bad
// options, a bad name, (EvictionFail) an evicting server, or a Redis/context
// error. The caller keeps ownership of client; Close does not close
// it.
func New(ctx context.Context, client redis.UniversalClient, name string, opts ...Option) (*Queue, error) {
	if client == nil {
		return nil, errors.New("redisq: nil client")
	}
	if name == "" || strings.ContainsAny(name, "{}") {
		return nil, fmt.Errorf("redisq: bad queue name %q", name)
	}
	o := defaultOptions()
	for _, f := range opts {
		if err := f(&o); err != nil {
			return nil, err
		}
	}
	var inst [8]byte
	_, _ = rand.Read(inst[:])
	keys := rdb.QueueKeys(name)
	q := &Queue{
		client: client,
		wait:   client,
		name:   name,
		opt:    o,
		wpref:  keys.Private(hex.EncodeToString(inst[:])),
		subsec: time.Second,

		registered: map[string]bool{},
	}
	q.enq = q.newEnqueues()
	q.db = &rdb.Runner{
		Client:         client,
		Keys:           keys,
		MigrationWait:  o.migrationWait,
		Replicas:       o.replicas,
		ReplicaTimeout: o.replicaTimeout,
		Inst:           "q" + hex.EncodeToString(inst[:]) + ".", // request ids
		NewLife:        q.newLife,
	}
	if o.waitClient != nil {
		q.wait = o.waitClient
	}
	if o.replicas > 0 {
		switch client.(type) {
		case *redis.Client, *redis.ClusterClient:
		default:
			return nil, fmt.Errorf("redisq: WithReplicaAcks needs a *redis.Client or *redis.ClusterClient, not %T", client)
		}
		if rt := readTimeout(client); rt > 0 && o.replicaTimeout >= rt {
			return nil, fmt.Errorf("redisq: replica ack timeout %v is not below the client's ReadTimeout %v", o.replicaTimeout, rt)
		}
	}
	// Sub-second waits go through Do, which uses the client's ReadTimeout;
	// keep them well inside it.
	if rt := readTimeout(q.wait); rt > 0 && rt < 2*time.Second {
		q.subsec = rt / 2
		if q.subsec < time.Millisecond {
			q.subsec = time.Millisecond
		}
	}
	if err := q.checkEviction(ctx); err != nil {
		return nil, err
	}
	partitioned, err := q.db.Migrate(ctx)
	if err != nil {
		return nil, fmt.Errorf("redisq: opening queue %q: %w", name, err)
	}
	if partitioned {
		return nil, fmt.Errorf("redisq: %q is a partitioned queue (use OpenPartitioned)", name)
	}
	q.register(ctx)
	q.closeCtx, q.closeFunc = context.WithCancel(context.Background())
	q.timer.watch = time.AfterFunc(time.Hour, q.timerDue)
	q.timer.watch.Stop()
	return q, nil
}

func readTimeout(c redis.UniversalClient) time.Duration {
	var rt time.Duration
	switch v := c.(type) {
	case *redis.Client:
		rt = v.Options().ReadTimeout
	case *redis.ClusterClient:
		rt = v.Options().ReadTimeout
	case *redis.Ring:
		rt = v.Options().ReadTimeout
	default:
		return 0
	}
	if rt == 0 {
		rt = 3 * time.Second // go-redis default
	}
	return rt
}

// Name returns the queue name.
func (q *Queue) Name() string { return q.name }

func (q *Queue) isClosed() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.closed
}

func checkID(id string) error {
	if id == "" {
		return errors.New("redisq: empty id")
	}
	return nil
}

func msTime(ms int64) time.Time { return time.UnixMilli(ms) }

// msDuration is ms milliseconds as a Duration, saturated at the Duration
// limits (about 292 years) instead of wrapping.
func msDuration(ms int64) time.Duration {
	const lim = math.MaxInt64 / int64(time.Millisecond)
	switch {
	case ms > lim:
		return math.MaxInt64
	case ms < -lim:
		return math.MinInt64
	}
	return time.Duration(ms) * time.Millisecond
}

// Bounds shared with the scripts (see the storage layer, internal/rdb).
const (
	// scriptBatch bounds the work of one claim script whatever the
	// options: at most this many expired leases and this many due items.
	scriptBatch = rdb.ScriptBatch
	// maxDueMS is the latest due time stored (2^53-1 ms, about year
	// 287,000); minDueMS mirrors it in the past.
	maxDueMS = rdb.MaxDueMS
	minDueMS = rdb.MinDueMS
)

// dueMS is at in whole milliseconds, rounded up (never early) and clamped to
// [minDueMS, maxDueMS]: Unix milliseconds of the extremes of time.Time
// overflow int64, and the scripts need exact integers under 1e17.
func dueMS(at time.Time) int64 {
	// Whole seconds beyond these are beyond the bounds whatever the
	// fraction (and s*1000 might overflow); the seconds at the bounds
	// themselves are computed to the millisecond and clamped.
	s := at.Unix()
	switch {
	case s > maxDueMS/1000:
		return maxDueMS
	case s < minDueMS/1000-1:
		return minDueMS
	}
	ms := s*1000 + int64(at.Nanosecond()/1e6)
	if at.Nanosecond()%1e6 != 0 {
		ms++
	}
	return min(max(ms, minDueMS), maxDueMS)
}

// delayUS is d in whole microseconds, rounded up (never early); d <= 0 is 0.
// The scripts add it to Redis TIME and round the sum up to the millisecond.
func delayUS(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	us := int64(d / time.Microsecond)
	if d%time.Microsecond != 0 {
		us++
	}
	return us
}

// Enqueue schedules payload under id to be due at the absolute time at,
// rounded up to the millisecond. at is the caller's clock: use EnqueueAfter
// to have Redis compute the due time. Times after year 287,396 (2^53-1 ms
// after 1970, where exact script arithmetic ends) are stored as that
// instant, as a "never" sentinel such as time.Unix(math.MaxInt64, 0) is;
// times before year -283,457 are stored as that instant (due at once, like
// any past time). Message.Due reports the stored time. It blocks for one
// round trip, or about two when other Enqueue calls of this Queue are in flight:
// calls that overlap in time are combined, those made during a round trip
// being sent together by one script when it returns (in arrival order, each
// with its own outcome), so concurrent producers share round trips instead
// of queueing for the server one by one. It returns ErrDuplicate when id
// already exists in any state or an overlapping call stored it first
// (nothing changes), ErrClosed after Close, or a Redis/context error (the
// item may or may not have been stored; retrying with the same id is safe).
// A call whose ctx ends while it waits to be sent returns ctx.Err() at once
// and is normally not sent (it is, with its outcome unknown, when a sender
// took it at that moment); a call that sends other calls' items with its own
// completes that round trip whatever its ctx.
func (q *Queue) Enqueue(ctx context.Context, id string, payload []byte, at time.Time) error {
	_, err := q.enqueue(ctx, id, payload, rdb.When{V: dueMS(at)}, rdb.Job{})
	return err
}

// EnqueueAfter schedules payload under id to be due delay after the Redis
// server's current TIME (delay <= 0 means due now): the due time is the first
// whole millisecond at or after TIME (in microseconds) + delay, so the item
// is never delivered before that instant (and "now" is the next whole
// millisecond unless TIME is one). Blocking and outcomes as Enqueue.
// It returns the due time by the Redis clock.
func (q *Queue) EnqueueAfter(ctx context.Context, id string, payload []byte, delay time.Duration) (time.Time, error) {
	return q.enqueue(ctx, id, payload, rdb.When{After: true, V: delayUS(delay)}, rdb.Job{})
}

// Add enqueues one item with its Job (kind, headers, options), as Enqueue
// does when it.At is set and as EnqueueAfter does (with it.After) when it
// is the zero Time; Enqueue and EnqueueAfter are Add with no Job. Blocking,
// combining and outcomes are theirs, and it returns the due time by the
// Redis clock. A Job that cannot be stored (see Job) returns an error and
// sends nothing.
func (q *Queue) Add(ctx context.Context, it EnqueueItem) (time.Time, error) {
	if err := it.Job.check(); err != nil {
		return time.Time{}, err
	}
	return q.enqueue(ctx, it.ID, it.Payload, it.when(), it.Job.stored())
}

// Cancel removes the item id in any state. It blocks for one round trip,
// O(log n). It returns an error only when it changed nothing: CancelRemoved
// when a scheduled or dead item was removed (it will never be delivered);
// CancelMarked when the item is leased (it is then marked: its Ack, Nack or
// DeadLetter deletes it and an expired lease is not retried; the consumer
// holding it may still act on it); ErrNotFound for an unknown id, ErrClosed
// after Close, or a Redis/context error. A Cancel whose reply was lost and
// that go-redis runs again reports what the first run did (each call
// carries a request id).
func (q *Queue) Cancel(ctx context.Context, id string) (CancelOutcome, error) {
	if err := checkID(id); err != nil {
		return 0, err
	}
	if q.isClosed() {
		return 0, ErrClosed
	}
	f, err := q.db.Cancel(ctx, id)
	if err != nil {
		return 0, err
	}
	switch f {
	case rdb.NotFound:
		return 0, ErrNotFound
	case rdb.InFlight:
		return CancelMarked, nil
	}
	return CancelRemoved, nil
}

// Reschedule moves a scheduled item to the absolute time at (caller's clock,
// rounded up and clamped as in Enqueue) or revives a dead or completed item there with
// attempts reset to 0. It blocks for one round trip, O(log n). The item goes
// behind items already due at the same millisecond. It returns nil when
// moved, ErrInFlight when the item is leased (nothing changes), ErrNotFound
// for an unknown id, ErrClosed after Close, or a Redis/context error.
func (q *Queue) Reschedule(ctx context.Context, id string, at time.Time) error {
	_, err := q.reschedule(ctx, id, rdb.When{V: dueMS(at)})
	return err
}

// RescheduleAfter is Reschedule with a due time of Redis TIME + delay, rounded
// up to the millisecond as in EnqueueAfter, which it returns. Blocking and
// outcomes as Reschedule.
func (q *Queue) RescheduleAfter(ctx context.Context, id string, delay time.Duration) (time.Time, error) {
	return q.reschedule(ctx, id, rdb.When{After: true, V: delayUS(delay)})
}

func (q *Queue) reschedule(ctx context.Context, id string, when rdb.When) (time.Time, error) {
	if err := checkID(id); err != nil {
		return time.Time{}, err
	}
	if q.isClosed() {
		return time.Time{}, ErrClosed
	}
	f, due, err := q.db.Reschedule(ctx, id, when)
	if err != nil {
		return time.Time{}, err
	}
	switch f {
	case rdb.NotFound:
		return time.Time{}, ErrNotFound
	case rdb.InFlight:
		return time.Time{}, ErrInFlight
	}
	return msTime(due), nil
}

// Take blocks until one item is due and leased to the caller, ctx is done, or
// the queue is closed. Items are never delivered before their due time by the
// Redis clock, come in due order, FIFO among equal due times, and stay leased
// for the visibility timeout. While nothing is due, Take blocks without
// polling: each wait is one BZPOPMIN (on the queue's wake marker and a private
// key) followed by one claim script. Across all consumers of the queue one
// waiter owns the timer for the next due item or lease deadline and is woken
// for it; the others wait on the marker for up to the wake cap, and whoever
// claims and leaves work behind re-arms the marker. It returns the message;
// ctx.Err() when ctx is done; ErrClosed when Close was called; or a Redis
// error (the caller may retry). Each blocked Take holds one connection of
// the wait client.
//
// A claim whose reply is lost (the connection breaks or times out after the
// script ran) is not idempotent: the items that run leased are leased to
// nobody. go-redis runs the claim again (or Take returns the error), which
// leases other items; the lost ones are redelivered when their lease
// expires, with Attempts counting the lost delivery, so with
// WithMaxAttempts(1) such an item goes to the dead set ("max attempts: lease
// expired") without having been handled. Keeping the claim free of an extra
// command per call is the reason; keep the visibility timeout short enough
// for such redeliveries, and max attempts above 1.
func (q *Queue) Take(ctx context.Context) (*Message, error) {
	return q.AckTake(ctx, nil)
}

// AckTake acks done and takes the next item: done.Ack followed by Take, in
// one round trip when an item is due (one script acks and claims). It is the
// loop of a consumer that settles each item by Ack:
//
//	var done *redisq.Message
//	for {
//		m, err := q.AckTake(ctx, done) // a nil done is a plain Take
//		if errors.Is(err, redisq.ErrLeaseLost) {
//			done = nil // done's lease had expired; nothing was taken
//			continue
//		}
//		if err != nil {
//			if done != nil {
//				err = errors.Join(err, done.Ack(context.WithoutCancel(ctx)))
//			}
//			return err
//		}
//		process(m)
//		done = m
//	}
//
// It returns what Take returns, or ErrLeaseLost when done's lease is lost
// (then nothing is taken). Any other error may leave done unacked (a ctx
// that ended first, a Redis error): done.Ack settles it, since a repeated
// ack of an applied one returns nil. After Close it acks done, then returns
// ErrClosed. With WithReplicaAcks, an error wrapping ErrNotReplicated says
// done's ack was applied on the master but not confirmed by the replicas
// (done.Ack again waits for them once more); nothing is taken: what the
// script claimed is released at once, with Attempts as before (see
// Message.Release). When this
// Queue waits for a due time a few milliseconds away,
// AckTake acks alone and then waits for it, as Take. A done of another Queue
// value (or another queue) is acked on its own Queue first.
func (q *Queue) AckTake(ctx context.Context, done *Message) (*Message, error) {
	if done != nil && done.q != q {
		if err := done.Ack(ctx); err != nil {
			return nil, err
		}
		done = nil
	}
	ms, err := q.takeBatch(ctx, 1, done)
	if err != nil {
		if len(ms) > 0 { // done's ack unconfirmed: hand back what was claimed
			q.releaseAll(ctx, ms)
		}
		return nil, err
	}
	return ms[0], nil
}

// releaseAll releases ms, which the caller will not return, within
// settleTimeout even if ctx has ended; a release that fails leaves its item
// to come back after its lease.
func (q *Queue) releaseAll(ctx context.Context, ms []*Message) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	for _, m := range ms {
		_ = m.Release(ctx) // an ErrNotReplicated release was applied too
	}
}

// TakeBatch is Take for up to n (1..MaxBatch) items: it blocks until at least
// one is due and returns all due items up to n, leased to the caller. One
// claim script leases at most 100 items (see "Bounded scripts" in the package
// doc), so for larger n TakeBatch runs claims back to back while items are
// due, and the messages' Deadlines may differ by the time between them; if
// ctx ends or Redis fails between two claims, it returns the items leased so
// far. Outcomes as Take; a bad n returns an error at once.
func (q *Queue) TakeBatch(ctx context.Context, n int) ([]*Message, error) {
	if n < 1 || n > MaxBatch {
		return nil, fmt.Errorf("redisq: batch size %d not in 1..%d", n, MaxBatch)
	}
	return q.takeBatch(ctx, n, nil)
}

// takeBatch is TakeBatch, acking done (a Message of q, or nil) first: a
// loop of claims (claim) and of waits for work between them (waitWork).
func (q *Queue) takeBatch(ctx context.Context, n int, done *Message) ([]*Message, error) {
	tctx, leave, err := q.enterTake(ctx)
	if err != nil {
		if done != nil { // Ack works after Close: settle done, then report
			if err := done.Ack(ctx); err != nil {
				return nil, err
			}
		}
		return nil, err
	}
	defer leave()
	ctx = tctx

	// popped: a wait consumed a wake-up meant for some waiter and no
	// claim acted on it yet; pass it on if the call leaves so.
	popped := false
	defer func() { q.passWakeIf(popped) }()
	// A consumer coming back while this Queue owns the timer waits for its
	// deadline at once: its last claim found nothing due before it.
	at, wait := q.timerOwned()
	if done != nil && wait {
		if time.Until(at) <= localWaitMax {
			// A short local wait follows: ack alone, then wait.
			if err := done.Ack(ctx); err != nil {
				return nil, err
			}
			done = nil
		} else {
			wait = false // a BZPOPMIN would follow the ack: ack and claim instead
		}
	}
	for {
		if wait {
			wk, err := q.waitWork(ctx, false)
			if err != nil {
				return nil, err // the wait passed on what it consumed
			}
			popped = wk.popped
		}
		wait = true
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		msgs, next, err := q.claim(ctx, n, done)
		done = nil
		if err == nil || len(msgs) > 0 {
			popped = false // the claim acted on the wake-up we consumed
		}
		if err != nil && len(msgs) > 0 {
			return msgs, err // done's ack unconfirmed (see claim)
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, context.Cause(ctx)
			}
			return nil, err
		}
		if len(msgs) > 0 {
			// Due items may be left that this script did not take (it
			// leases at most scriptBatch): claim them too, up to n.
			for len(msgs) < n && next == 0 && ctx.Err() == nil {
				more, nx, err := q.claim(ctx, n-len(msgs), nil)
				if err != nil || len(more) == 0 {
					break
				}
				msgs, next = append(msgs, more...), nx
			}
			return msgs, nil
		}
		if next == 0 {
			wait = false // work left behind (e.g. a full reclaim batch)
		}
	}
}

// await waits wait for the wake marker (block), or, for a short wait for
// a known due time (timed), sleeps locally instead of a BZPOPMIN plus the
// push that ends it: each of those is a write (with appendfsync always, an
// fsync before the reply), and a new earlier head meanwhile wakes another
// waiter through the marker. popped reports a wake-up consumed.
func (q *Queue) await(ctx context.Context, wait time.Duration, timed bool) (popped bool, err error) {
	if timed && wait <= localWaitMax {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
		return false, nil
	}
	return q.block(ctx, wait, timed)
}

// claim runs the claim script once for up to n items (n may be 0 to only
// reclaim expired leases), after acking done unless it is nil. next is the
// time until the next due item or lease deadline, or -1. When the claim gave
// this Queue the timer, it records the deadline (see timerState). An error
// wrapping ErrNotReplicated (WithReplicaAcks: done's ack was applied, not
// confirmed) comes with the messages the claim leased: the caller holds
// them (see unconfirmed).
func (q *Queue) claim(ctx context.Context, n int, done *Message) ([]*Message, time.Duration, error) {
	a := q.claimArgs(n)
	if done != nil {
		a.AckID, a.AckToken, a.AckResult = done.ID, done.token, done.result
	}
	r, err := q.db.Claim(ctx, a)
	if r.LeaseLost { // nothing was acked, nothing claimed
		return nil, 0, ErrLeaseLost
	}
	if err != nil && !unconfirmed(err) {
		return nil, 0, err
	}
	if done != nil && err == nil {
		done.acked.Store(true) // a failure after this claim leaves done acked
	}
	ms, next := q.claimed(r)
	return ms, next, err
}

// claimAcking acks dones (of this Queue, at most rdb.ScriptBatch) and claims as
// many items in one script, whatever the acks find: acked[i] reports
// whether dones[i] was acked (false: its lease was lost). Like claim, it
// returns what it leased with an ErrNotReplicated.
func (q *Queue) claimAcking(ctx context.Context, dones []*Message) (ms []*Message, next time.Duration, acked []bool, err error) {
	a := q.claimArgs(len(dones))
	a.Acks = make([]rdb.Lease, len(dones))
	for i, m := range dones {
		a.Acks[i] = rdb.Lease{ID: m.ID, Token: m.token, Result: m.result}
	}
	r, err := q.db.Claim(ctx, a)
	if err != nil && !unconfirmed(err) {
		return nil, 0, nil, err
	}
	ms, next = q.claimed(r)
	return ms, next, r.Acked, err
}

// unconfirmed reports whether err is an acknowledging write's ErrNotReplicated:
// the write was applied on the master, and a claim that carried it leased
// its items all the same.
func unconfirmed(err error) bool { return errors.Is(err, ErrNotReplicated) }

func (q *Queue) claimArgs(n int) rdb.ClaimArgs {
	return rdb.ClaimArgs{N: n, Visibility: delayUS(q.opt.visibility), MaxAttempts: q.opt.maxAttempts,
		BackoffBase: delayUS(q.opt.backoffBase), BackoffMax: delayUS(q.opt.backoffMax), ReclaimBatch: q.opt.reclaimBatch,
		TimerID: q.timerID(), Watch: true}
}

// claimed takes the timer as a claim's reply r says and returns its
// messages and the time until the next due item (see claim).
func (q *Queue) claimed(r rdb.ClaimReply) ([]*Message, time.Duration) {
	next := time.Duration(-1)
	if v := r.Next; v >= 0 {
		if v > int64(24*time.Hour/time.Millisecond) {
			v = int64(24 * time.Hour / time.Millisecond) // avoid Duration overflow
		}
		next = time.Duration(v) * time.Millisecond
	}
	switch {
	case r.Timed:
		q.ownTimer(time.Now().Add(next))
	case next > 0:
		q.dropTimer() // another Queue acts first
	case next == 0 && len(r.Items) > 0:
		// Due work is left and the script left it to us (Watch): a
		// consumer of ours coming back claims it, else the watch rings.
		q.ownTimer(time.Now())
	}
	msgs := make([]*Message, 0, len(r.Items))
	for _, it := range r.Items {
		msgs = append(msgs, &Message{
			q:         q,
			ID:        it.ID,
			Payload:   it.Payload,
			Attempts:  it.Attempts,
			Due:       msTime(it.Due),
			ClaimedAt: msTime(r.Now),
			Deadline:  msTime(it.Deadline),
			Job:       jobFrom(it.Job),
			token:     it.Token,
		})
	}
	return msgs, next
}

// block waits on the wake marker and this waiter's private key for at most
// wait. Cancelling ctx pushes a marker to the private key, so the wait ends
// promptly whether or not the client honours context deadlines. When timed
// is set (the wait ends at a known due time or lease deadline, not at the
// cap), a local timer pushes that marker at the end of the wait too: Redis
// only checks blocked-client timeouts once per event-loop pass (every
// 1000/hz ms, 100ms at the default hz 10 on an idle server), which alone
// would make deliveries up to 100ms late. The server-side timeout stays as a
// backstop. The timer measures a duration that Redis computed; the claim
// that follows still decides by Redis TIME, so an early timer only costs one
// more claim.
func (q *Queue) block(ctx context.Context, wait time.Duration, timed bool) (popped bool, err error) {
	key := q.wpref + strconv.FormatUint(q.waitSeq.Add(1), 10)
	var once sync.Once
	fired := make(chan struct{})
	push := func() {
		once.Do(func() {
			defer close(fired)
			c, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			_ = q.db.Unblock(c, key)
		})
	}
	stop := context.AfterFunc(ctx, push)
	var timer *time.Timer
	server := wait
	if timed {
		timer = time.AfterFunc(wait, push)
		server = wait + 200*time.Millisecond
	}
	popped, err = q.db.WaitWake(ctx, q.wait, key, server, q.subsec)
	stopped := stop()
	if timer != nil && !timer.Stop() {
		stopped = false
	}
	if !stopped {
		<-fired
	}
	if errors.Is(err, redis.Nil) {
		err = nil
	}
	return popped, err
}

// Stats is a point-in-time view of a queue, timed by the Redis clock.
type Stats struct {
	Now           time.Time     // Redis TIME when the stats were read
	Scheduled     int64         // items in sched, due or not
	DueBacklog    int64         // scheduled items already due
	OldestOverdue time.Duration // how long the earliest due item has been due (0 if none; saturated at the Duration maximum)
	InFlight      int64         // leased items
	Dead          int64         // dead-lettered items
	Completed     int64         // acked items kept for their Job's Retention
	Paused        bool          // no claim leases anything (see Pause)
	PausedSince   time.Time     // when Pause paused it (zero when not paused, or paused by a version that did not say)
	RateLimits    int           // rate limits set on the queue's limit keys (see SetRateLimit; RateLimits reads them)
	// ConcurrencyLimits counts the concurrency limits set on its limit keys
	// (see SetConcurrencyLimit; ConcurrencyLimits reads them).
	ConcurrencyLimits int
	// QueueRateLimit is the queue's own rate limit (SetQueueRateLimit;
	// zero: none).
	QueueRateLimit RateLimit
	// Counters since the queue was created (Destroy resets them); see
	// StatsCounters.
	StatsCounters
	// Lateness of deliveries: Redis TIME at claim - due time.
	Lateness Lateness
	// Counters holds the same counters by their field name in the stats hash
	// ("enqueued", "delivered", ...), only those that are non-zero.
	//
	// Deprecated: use the fields of StatsCounters, which are always set.
	Counters map[string]int64
}

// Stats reads the queue's sizes and counters in one script call (one round
// trip, O(log n)). It returns ErrClosed after Close or a Redis/context error.
func (q *Queue) Stats(ctx context.Context) (Stats, error) {
	if q.isClosed() {
		return Stats{}, ErrClosed
	}
	r, err := q.db.Stats(ctx)
	if err != nil {
		return Stats{}, err
	}
	s := Stats{
		Now:        msTime(r.Now),
		Scheduled:  r.Scheduled,
		DueBacklog: r.Due,
		InFlight:   r.InFlight,
		Dead:       r.Dead,
		Completed:  r.Completed,
		Counters:   map[string]int64{},
		Paused:     r.Paused,
		RateLimits: int(r.RateLimits), ConcurrencyLimits: int(r.ConcLimits),
		QueueRateLimit: RateLimit{N: int(r.QueueRateN), Per: time.Duration(r.QueueRatePer) * time.Microsecond},
	}
	if r.HasHead && r.Head <= r.Now {
		s.OldestOverdue = msDuration(r.Now - r.Head)
	}
	for k, v := range r.Counters {
		s.Counters[k] = v
	}
	s.Lateness = latenessFrom(r.Lateness)
	// Every delivery adds one count to the lateness histogram, and every new
	// item takes one sequence number that no requeue took (see next_seq).
	for k, v := range map[string]int64{"delivered": s.Lateness.Count(), "enqueued": r.NewItems} {
		if v != 0 {
			s.Counters[k] = v
		}
	}
	s.StatsCounters = countersFrom(s.Counters)
	if r.PausedAt > 0 {
		s.PausedSince = msTime(r.PausedAt)
	}
	return s, nil
}

// DeadIDs returns up to limit ids from the dead set, oldest death first (one
// round trip). Revive one with Reschedule or drop it with Cancel.
func (q *Queue) DeadIDs(ctx context.Context, limit int64) ([]string, error) {
	if q.isClosed() {
		return nil, ErrClosed
	}
	if limit < 1 {
		return nil, nil
	}
	return q.db.DeadIDs(ctx, limit)
}

// Close stops the queue: Take calls in progress return ErrClosed (a blocked
// wait is interrupted through its private wake key), as KeepRecurring does,
// and Close blocks until they have returned. Later Enqueue, Take, Cancel, Reschedule, Stats and
// DeadIDs return ErrClosed; Message.Ack/Nack/Extend keep working so held
// messages can be settled. Close does not close the Redis clients. It always
// returns nil and is idempotent.
func (q *Queue) Close() error {
	q.closeOnce.Do(func() {
		q.mu.Lock()
		q.closed = true
		q.mu.Unlock()
		q.closeFunc()
	})
	q.active.Wait()
	q.closeTimer()
	return nil
}

// CancelOutcome says what Cancel did.
type CancelOutcome int

func (o CancelOutcome) String() string {
	switch o {
	case CancelRemoved:
		return "removed"
	case CancelMarked:
		return "marked in flight"
	}
	return "CancelOutcome(?)"
}

const (
	// CancelRemoved: the item was scheduled or dead and is gone.
	CancelRemoved CancelOutcome = iota + 1
	// CancelMarked: the item is in flight and is now marked: its consumer's
	// Ack, Nack or DeadLetter deletes it, and an expired lease is not
	// retried. The consumer holding it may still act on it.
	CancelMarked
)
