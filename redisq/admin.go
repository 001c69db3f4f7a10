package redisq

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dq-go/delayqueue/redisq/internal/rdb"
)

var (
	// ErrNotDead is returned by RequeueDead and DeleteDead when the item
	// exists but is not dead; nothing is changed.
	ErrNotDead = errors.New("redisq: item is not dead")
	// ErrNoQueue is returned by Purge, RequeueAllDead, DeleteAllDead and
	// Destroy when the queue has no data in Redis (see Exists): most often a
	// mistyped name. Nothing is changed.
	ErrNoQueue = errors.New("redisq: no such queue")
)

// adminBatch is how many items one admin batch script handles (reviving an
// item rewrites its hash and zsets): a bounded script, see
// docs/performance.md#bounded-scripts.
const adminBatch = 200

// ScheduleResult is what Schedule did.
type ScheduleResult struct {
	Due     time.Time // the due time (Redis clock for ScheduleAfter)
	Created bool      // a new item; false: an existing one was replaced
}

// Schedule is an atomic upsert: it stores payload under id, due at the
// absolute time at (caller's clock, rounded up to the millisecond and
// clamped as in Enqueue), whether or not the id exists. A new id is
// enqueued (as Enqueue); a scheduled item gets the new payload, Job (none:
// see ScheduleItem) and due time and keeps its attempts; a dead item is
// revived with them and attempts reset to 0. The item goes behind items already due
// at the same millisecond. On an in-flight item it returns ErrInFlight and
// changes nothing. One round trip, O(log n). It also returns ErrClosed after
// Close, or a Redis/context error (the upsert may or may not have been
// applied; retrying is safe). A Schedule whose reply was lost and that
// go-redis runs again reports what the first run did (Created included) and
// does not apply the upsert twice (each call carries a request id).
func (q *Queue) Schedule(ctx context.Context, id string, payload []byte, at time.Time) (ScheduleResult, error) {
	return q.schedule(ctx, id, payload, rdb.When{V: dueMS(at)}, Job{})
}

// ScheduleAfter is Schedule with a due time of Redis TIME + delay (delay <= 0
// means due now), rounded up to the millisecond as in EnqueueAfter, which it
// returns.
func (q *Queue) ScheduleAfter(ctx context.Context, id string, payload []byte, delay time.Duration) (ScheduleResult, error) {
	return q.schedule(ctx, id, payload, rdb.When{After: true, V: delayUS(delay)}, Job{})
}

// ScheduleItem is Schedule (with it.At) or ScheduleAfter (with it.After,
// when it.At is the zero Time) of an item with its Job, which replaces the
// Job of the item it replaces; Schedule and ScheduleAfter are ScheduleItem
// with no Job. A Job that cannot be stored (see Job) returns an error and
// sends nothing.
func (q *Queue) ScheduleItem(ctx context.Context, it EnqueueItem) (ScheduleResult, error) {
	return q.schedule(ctx, it.ID, it.Payload, it.when(), it.Job)
}

func (q *Queue) schedule(ctx context.Context, id string, payload []byte, when rdb.When, j Job) (ScheduleResult, error) {
	if err := q.checkOp(id); err != nil {
		return ScheduleResult{}, err
	}
	if err := j.check(); err != nil {
		return ScheduleResult{}, err
	}
	if err := j.noUnique("Schedule"); err != nil {
		return ScheduleResult{}, err
	}
	f, created, due, err := q.db.Upsert(ctx, id, payload, when, j.stored())
	if err != nil {
		return ScheduleResult{}, err
	}
	if f == rdb.InFlight {
		return ScheduleResult{}, ErrInFlight
	}
	return ScheduleResult{Due: msTime(due), Created: created}, nil
}

func (q *Queue) checkOp(id string) error {
	if err := checkID(id); err != nil {
		return err
	}
	if q.isClosed() {
		return ErrClosed
	}
	return nil
}

// RequeueDead revives the dead item id: it is due now (Redis TIME), with
// attempts reset to 0 and its dead reason cleared. One round trip, O(log n).
// It returns ErrNotFound for an unknown id, ErrNotDead when the item is
// scheduled or in flight (nothing changes), ErrClosed after Close, or a
// Redis/context error.
func (q *Queue) RequeueDead(ctx context.Context, id string) error {
	return q.deadOne(ctx, id, true)
}

// DeleteDead deletes the dead item id. Outcomes as RequeueDead.
func (q *Queue) DeleteDead(ctx context.Context, id string) error {
	return q.deadOne(ctx, id, false)
}

func (q *Queue) deadOne(ctx context.Context, id string, revive bool) error {
	if err := q.checkOp(id); err != nil {
		return err
	}
	f, err := q.db.DeadOne(ctx, id, revive)
	if err != nil {
		return err
	}
	switch f {
	case rdb.NotFound:
		return ErrNotFound
	case rdb.InFlight:
		return ErrNotDead
	}
	return nil
}

// RequeueAllDead revives every item that was dead when it was called, in
// order of death, as RequeueDead does, and returns how many. It works in
// batches: each batch is one atomic script of 200 items (bounded
// work, so consumers are not stalled), and items that die while it runs are
// left dead. It returns ErrNoQueue when the queue has no data, ErrClosed
// after Close, or a Redis/context error together with the number revived
// until then.
func (q *Queue) RequeueAllDead(ctx context.Context) (int64, error) {
	return q.deadBatches(ctx, true, "")
}

// RequeueDeadByReason is RequeueAllDead for the dead items that died of
// exactly reason (Item.DeadReason; see DeadReasons): those dead when it was
// called are revived, in batches of 200 examined dead items, so its cost
// grows with the dead set, not with the group. An empty reason is an
// error.
func (q *Queue) RequeueDeadByReason(ctx context.Context, reason string) (int64, error) {
	if reason == "" {
		return 0, errors.New("redisq: empty dead reason")
	}
	return q.deadBatches(ctx, true, reason)
}

// DeleteDeadByReason is DeleteAllDead for the dead items that died of
// exactly reason; batches and outcomes as RequeueDeadByReason.
func (q *Queue) DeleteDeadByReason(ctx context.Context, reason string) (int64, error) {
	if reason == "" {
		return 0, errors.New("redisq: empty dead reason")
	}
	return q.deadBatches(ctx, false, reason)
}

// DeleteAllDead deletes every item that was dead when it was called and
// returns how many; batches and outcomes as RequeueAllDead.
func (q *Queue) DeleteAllDead(ctx context.Context) (int64, error) {
	return q.deadBatches(ctx, false, "")
}

// Purge empties one state and returns how many items it changed: scheduled,
// dead and completed items are deleted; in-flight items are marked as Cancel marks them
// (their consumers' Ack or Nack deletes them and expired leases are not
// retried), and only those not marked before are counted. It handles the
// items in the state when it was called, in batches as RequeueAllDead (items
// that arrive meanwhile may or may not be included). Outcomes as
// RequeueAllDead.
func (q *Queue) Purge(ctx context.Context, state State) (int64, error) {
	switch state {
	case StateScheduled:
		return q.batches(ctx, rdb.PurgeScheduled)
	case StateInFlight:
		// Marking leaves items in place, so items acked meanwhile shift the
		// ranks of the rest: a second pass marks any that were skipped.
		n, err := q.batches(ctx, rdb.MarkInFlight)
		if err == nil {
			var more int64
			more, err = q.runBatches(ctx, rdb.MarkInFlight)
			n += more
		}
		return n, err
	case StateDead:
		return q.deadBatches(ctx, false, "")
	case StateCompleted:
		return q.batches(ctx, rdb.PurgeCompleted)
	}
	return 0, fmt.Errorf("redisq: bad state %d", int(state))
}

// deadBatches requeues (revive) or deletes, one bulk-dead script a batch
// (see lua/bulk_dead.lua), the items dead when it was called (of reason only, unless it is empty): the
// first batch reads where the dead set ends (its last score, and the
// sequence, which every later death takes a number of), and every batch
// handles only the items within it. Items that die meanwhile, or of
// another reason, are skipped, and the next batch starts past the skipped
// ones.
func (q *Queue) deadBatches(ctx context.Context, revive bool, reason string) (int64, error) {
	if q.isClosed() {
		return 0, ErrClosed
	}
	if ok, err := q.Exists(ctx); err != nil || !ok {
		if err == nil {
			err = ErrNoQueue
		}
		return 0, err
	}
	var changed int64
	a := rdb.BulkDeadArgs{Revive: revive, Limit: adminBatch, Reason: reason}
	for {
		r, err := q.db.BulkDead(ctx, a)
		if err != nil {
			return changed, err
		}
		changed += r.Changed
		a.Skipped += r.Skipped
		a.CutSeq, a.CutAt = r.CutSeq, r.CutAt
		if r.Examined < adminBatch || a.CutSeq == "" {
			return changed, nil
		}
	}
}

// batches runs the bulk script's op until it has examined as many items as
// the state held at the start, and returns the number changed.
func (q *Queue) batches(ctx context.Context, op rdb.BulkOp) (int64, error) {
	if q.isClosed() {
		return 0, ErrClosed
	}
	if ok, err := q.Exists(ctx); err != nil || !ok {
		if err == nil {
			err = ErrNoQueue
		}
		return 0, err
	}
	return q.runBatches(ctx, op)
}

func (q *Queue) runBatches(ctx context.Context, op rdb.BulkOp) (int64, error) {
	var examined, changed, budget int64 = 0, 0, adminBatch
	for first := true; examined < budget; first = false {
		r, err := q.db.Bulk(ctx, op, min(adminBatch, budget-examined), examined)
		if err != nil {
			return changed, err
		}
		if first {
			budget = r.Size
		}
		changed += r.Changed
		if r.Examined == 0 {
			break
		}
		// Marking goes on from offset examined; the other ops remove the
		// items from the zset, so their next batch starts at its head.
		examined += r.Examined
	}
	return changed, nil
}

// Destroy deletes every key of the queue: its items in every state, the
// counters, the lateness histogram, the sequence, the wake marker and timer,
// ack tombstones and waiters' private wake keys, so that nothing of it is
// left in Redis, and then removes its name from the registry (RegistryKey).
// It returns the number of the queue's keys deleted (the registry entry is
// not one), or ErrNoQueue (and changes nothing else) when no key of the
// queue exists. Items are removed in atomic batches as Purge does, the rest
// with DEL of the keys found by SCAN (pages of 1000 keys) or, on a Cluster,
// by CLUSTER GETKEYSINSLOT on the master of the queue's slot (the other
// masters are not touched), so Destroy is safe on a busy server; stop the
// queue's producers and consumers first, or what they do meanwhile (a Take
// re-arming the marker, an Enqueue) is left behind. The Queue stays usable:
// using it creates the queue again, and its first write (or the first of
// any other Queue value of the name) adds the name to the registry again.
// Works after Close. Destroy needs a
// *redis.Client, *redis.ClusterClient or *redis.Ring.
func (q *Queue) Destroy(ctx context.Context) (int64, error) {
	var deleted int64
	for _, op := range []rdb.BulkOp{rdb.DestroySched, rdb.DestroyLease, rdb.DestroyDead, rdb.DestroyDone} {
		n, err := q.runBatches(ctx, op)
		deleted += n
		if err != nil {
			return deleted, err
		}
	}
	n, err := q.db.DeleteLeftKeys(ctx)
	deleted += n
	if err == nil && deleted == 0 {
		err = ErrNoQueue
	}
	return deleted, q.unregister(ctx, err)
}

// RunNowOutcome says what RunNow did.
type RunNowOutcome int

const (
	// RunNowMoved: a scheduled item that was not yet due is due now
	// (behind the items already due).
	RunNowMoved RunNowOutcome = iota + 1
	// RunNowAlreadyDue: the item was due already; it keeps its place, so
	// an overdue item is never put behind the items due after it.
	RunNowAlreadyDue
	// RunNowRequeued: a dead item is revived, due now, with attempts
	// reset, as RequeueDead does (counted as requeued).
	RunNowRequeued
	// RunNowExtra: the item is the pending occurrence of a recurring
	// registration (see Register), not yet due. It stays where it is, so
	// the schedule's run happens at its time, and an extra run of it is
	// enqueued, due now: RunNowResult.ID names it.
	RunNowExtra
	// RunNowWaiting: the item is due but waits for its rate slot (see
	// Queue.SetRateLimit); it keeps its place, and the limit holds:
	// RunNowResult.Due is the slot.
	RunNowWaiting
	// RunNowWaitingForPlace: the item is due but waits for a place under
	// its concurrency limit (see Queue.SetConcurrencyLimit); it keeps its
	// place among the key's waiting items, and the limit holds.
	RunNowWaitingForPlace
)

// String returns "moved", "already due", "requeued", "extra run", "waits
// for its rate slot" or "waits for a place".
func (o RunNowOutcome) String() string {
	switch o {
	case RunNowMoved:
		return "moved"
	case RunNowAlreadyDue:
		return "already due"
	case RunNowRequeued:
		return "requeued"
	case RunNowExtra:
		return "extra run"
	case RunNowWaiting:
		return "waits for its rate slot"
	case RunNowWaitingForPlace:
		return "waits for a place"
	}
	return fmt.Sprintf("RunNowOutcome(%d)", int(o))
}

// RunNowResult is what RunNow did.
type RunNowResult struct {
	Outcome RunNowOutcome
	// ID is the item that runs: the one given, or the extra run's
	// (RunNowExtra).
	ID  string
	Due time.Time // its due time, by the Redis clock
}

// RunNow makes the item id run as soon as a consumer is free, without ever
// delaying it, which is what an operator's "run now" means:
//
//   - a scheduled item not yet due is made due now (RunNowMoved), behind
//     the items already due;
//   - an item already due keeps its place (RunNowAlreadyDue): an overdue
//     item is not moved behind the ones due after it;
//   - an item waiting for its rate slot keeps its place too
//     (RunNowWaiting), and so does one waiting for a place under its
//     concurrency limit (RunNowWaitingForPlace): a limit holds for an
//     operator as well;
//   - a recurring occurrence run (moved, or due already) is no longer
//     subject to its registration's Overlap or CatchUpWindow;
//   - a dead item is revived due now with attempts reset (RunNowRequeued),
//     as RequeueDead does;
//   - the pending occurrence of a recurring registration (the item of its
//     next occurrence, Registration.EnqueuedID, not yet due) is left in
//     place, so that the schedule's run still happens at its time, and an
//     extra run is enqueued due now with the occurrence's payload
//     (RunNowExtra): an item of its own, OccurrenceID(name, t) for t the
//     Redis time of the call, which the registration records as its last
//     run (Registration.Last). Moving that occurrence instead
//     (RescheduleAfter(id, 0)) would run it early and leave nothing at
//     its time.
//
// It blocks for one round trip (two for a recurring occurrence: Redis
// TIME names the extra run). It returns ErrInFlight when a consumer holds
// the item (nothing changes), ErrNotFound for an unknown id, ErrClosed
// after Close, or a Redis/context error (retrying is safe but for an extra
// run, which may then be enqueued twice).
func (q *Queue) RunNow(ctx context.Context, id string) (RunNowResult, error) {
	if err := q.checkOp(id); err != nil {
		return RunNowResult{}, err
	}
	name, _, occ := Occurrence(id)
	if occ && checkRegName(name) != nil {
		occ = false
	}
	if !occ {
		code, due, err := q.db.RunNow(ctx, rdb.RunNowArgs{ID: id})
		return runNowResult(id, code, due, err)
	}
	// The extra run's id carries the time it was asked for, by Redis.
	t, err := q.db.Time(ctx)
	if err != nil {
		return RunNowResult{}, err
	}
	ms := dueMS(t)
	for range 4 {
		extra := occurrenceID(name, ms)
		code, due, err := q.db.RunNow(ctx, rdb.RunNowArgs{ID: id, Reg: name, ExtraID: extra, ExtraDue: ms})
		if err == nil && code == rdb.RunNowTaken { // an occurrence at that very ms
			ms++
			continue
		}
		res, err := runNowResult(id, code, due, err)
		if res.Outcome == RunNowExtra {
			res.ID = extra
		}
		return res, err
	}
	return RunNowResult{}, errors.New("redisq: run now: no free id for the extra run; try again")
}

func runNowResult(id string, code rdb.RunNowCode, due int64, err error) (RunNowResult, error) {
	if err != nil {
		return RunNowResult{}, err
	}
	res := RunNowResult{ID: id, Due: msTime(due)}
	switch code {
	case rdb.RunNowNotFound:
		return RunNowResult{}, ErrNotFound
	case rdb.RunNowInFlight:
		return RunNowResult{}, ErrInFlight
	case rdb.RunNowMoved:
		res.Outcome = RunNowMoved
	case rdb.RunNowRequeued:
		res.Outcome = RunNowRequeued
	case rdb.RunNowAlreadyDue:
		res.Outcome = RunNowAlreadyDue
	case rdb.RunNowExtra:
		res.Outcome = RunNowExtra
	case rdb.RunNowWaiting:
		res.Outcome = RunNowWaiting
	case rdb.RunNowWaitingPlace:
		res.Outcome = RunNowWaitingForPlace
	default:
		return RunNowResult{}, fmt.Errorf("redisq: run now: unexpected outcome %d", code)
	}
	return res, nil
}
