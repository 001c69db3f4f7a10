package redisq

import (
	"context"
	"errors"
	"fmt"
	"time"
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

// adminBatch is how many items one admin batch script handles: about 2ms of
// server CPU on a small VM (reviving an item rewrites its hash and zsets).
const adminBatch = 200

// ScheduleResult is what Schedule did.
type ScheduleResult struct {
	Due     time.Time // the due time (Redis clock for ScheduleAfter)
	Created bool      // a new item; false: an existing one was replaced
}

// Schedule is an atomic upsert: it stores payload under id, due at the
// absolute time at (caller's clock, rounded up to the millisecond and clamped
// as in Enqueue), whether or not
// the id exists. A new id is enqueued (as Enqueue); a scheduled item gets the
// new payload and due time and keeps its attempts; a dead item is revived
// with them and attempts reset to 0. The item goes behind items already due
// at the same millisecond. On an in-flight item it returns ErrInFlight and
// changes nothing. One round trip, O(log n). It also returns ErrClosed after
// Close, or a Redis/context error (the upsert may or may not have been
// applied; retrying is safe). A Schedule whose reply was lost and that
// go-redis runs again reports what the first run did (Created included) and
// does not apply the upsert twice (each call carries a request id).
func (q *Queue) Schedule(ctx context.Context, id string, payload []byte, at time.Time) (ScheduleResult, error) {
	return q.schedule(ctx, id, payload, "at", dueMS(at))
}

// ScheduleAfter is Schedule with a due time of Redis TIME + delay (delay <= 0
// means due now), rounded up to the millisecond as in EnqueueAfter, which it
// returns.
func (q *Queue) ScheduleAfter(ctx context.Context, id string, payload []byte, delay time.Duration) (ScheduleResult, error) {
	return q.schedule(ctx, id, payload, "after", delayUS(delay))
}

func (q *Queue) schedule(ctx context.Context, id string, payload []byte, mode string, v int64) (ScheduleResult, error) {
	if err := q.checkOp(id); err != nil {
		return ScheduleResult{}, err
	}
	r, err := q.runOnce(ctx, scriptSchedule, []string{q.itemKey(id)}, id, payload, mode, v)
	if err != nil {
		return ScheduleResult{}, err
	}
	switch toInt(r[0]) {
	case 2:
		return ScheduleResult{}, ErrInFlight
	case 1:
		return ScheduleResult{Due: msTime(toMS(r[1])), Created: true}, nil
	}
	return ScheduleResult{Due: msTime(toMS(r[1]))}, nil
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
	return q.deadOne(ctx, id, "requeue")
}

// DeleteDead deletes the dead item id. Outcomes as RequeueDead.
func (q *Queue) DeleteDead(ctx context.Context, id string) error {
	return q.deadOne(ctx, id, "delete")
}

func (q *Queue) deadOne(ctx context.Context, id, op string) error {
	if err := q.checkOp(id); err != nil {
		return err
	}
	r, err := q.run(ctx, scriptDeadOne, []string{q.itemKey(id)}, id, op)
	if err != nil {
		return err
	}
	switch toInt(r[0]) {
	case 0:
		return ErrNotFound
	case 2:
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
	return q.deadBatches(ctx, "requeue", "")
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
	return q.deadBatches(ctx, "requeue", reason)
}

// DeleteDeadByReason is DeleteAllDead for the dead items that died of
// exactly reason; batches and outcomes as RequeueDeadByReason.
func (q *Queue) DeleteDeadByReason(ctx context.Context, reason string) (int64, error) {
	if reason == "" {
		return 0, errors.New("redisq: empty dead reason")
	}
	return q.deadBatches(ctx, "deldead", reason)
}

// DeleteAllDead deletes every item that was dead when it was called and
// returns how many; batches and outcomes as RequeueAllDead.
func (q *Queue) DeleteAllDead(ctx context.Context) (int64, error) {
	return q.deadBatches(ctx, "deldead", "")
}

// Purge empties one state and returns how many items it changed: scheduled
// and dead items are deleted; in-flight items are marked as Cancel marks them
// (their consumers' Ack or Nack deletes them and expired leases are not
// retried), and only those not marked before are counted. It handles the
// items in the state when it was called, in batches as RequeueAllDead (items
// that arrive meanwhile may or may not be included). Outcomes as
// RequeueAllDead.
func (q *Queue) Purge(ctx context.Context, state State) (int64, error) {
	switch state {
	case StateScheduled:
		return q.batches(ctx, "purge_s")
	case StateInFlight:
		// Marking leaves items in place, so items acked meanwhile shift the
		// ranks of the rest: a second pass marks any that were skipped.
		n, err := q.batches(ctx, "mark")
		if err == nil {
			var more int64
			more, err = q.runBatches(ctx, "mark")
			n += more
		}
		return n, err
	case StateDead:
		return q.deadBatches(ctx, "deldead", "")
	}
	return 0, fmt.Errorf("redisq: bad state %d", int(state))
}

// deadBatches runs scriptBulkDead's op ("requeue" or "deldead") on the
// items dead when it was called (of reason only, unless it is empty): the
// first batch reads where the dead set ends (its last score, and the
// sequence, which every later death takes a number of), and every batch
// handles only the items within it. Items that die meanwhile, or of
// another reason, are skipped, and the next batch starts past the skipped
// ones.
func (q *Queue) deadBatches(ctx context.Context, op, reason string) (int64, error) {
	if q.isClosed() {
		return 0, ErrClosed
	}
	if ok, err := q.Exists(ctx); err != nil || !ok {
		if err == nil {
			err = ErrNoQueue
		}
		return 0, err
	}
	var changed, skipped int64
	cutSeq, cutScore := "", ""
	for {
		r, err := q.run(ctx, scriptBulkDead, nil, op, adminBatch, skipped, cutSeq, cutScore, reason)
		if err != nil {
			return changed, err
		}
		changed += toInt(r[2])
		skipped += toInt(r[1])
		cutSeq, _ = r[3].(string)
		cutScore, _ = r[4].(string)
		if toInt(r[0]) < adminBatch || cutSeq == "" {
			return changed, nil
		}
	}
}

// batches runs scriptBulk's op until it has examined as many items as the
// state held at the start, and returns the number changed.
func (q *Queue) batches(ctx context.Context, op string) (int64, error) {
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

// bulkKeys are the keys scriptBulk declares for each op.
var bulkKeys = map[string]func(q *Queue) []string{
	"purge_s":   func(q *Queue) []string { return []string{q.keys[kSched], q.keys[kStats]} },
	"mark":      func(q *Queue) []string { return []string{q.keys[kLease]} },
	"destroy_s": func(q *Queue) []string { return []string{q.keys[kSched]} },
	"destroy_l": func(q *Queue) []string { return []string{q.keys[kLease]} },
	"destroy_d": func(q *Queue) []string { return []string{q.keys[kDead]} },
}

func (q *Queue) runBatches(ctx context.Context, op string) (int64, error) {
	var examined, changed, budget int64 = 0, 0, adminBatch
	for first := true; examined < budget; first = false {
		r, err := q.run(ctx, scriptBulk, bulkKeys[op](q), op, min(adminBatch, budget-examined), examined)
		if err != nil {
			return changed, err
		}
		n := toInt(r[0])
		if first {
			budget = toInt(r[1])
		}
		changed += toInt(r[2])
		if n == 0 {
			break
		}
		// Marking goes on from offset examined; the other ops remove the
		// items from the zset, so their next batch starts at its head.
		examined += n
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
	for _, op := range []string{"destroy_s", "destroy_l", "destroy_d"} {
		n, err := q.runBatches(ctx, op)
		deleted += n
		if err != nil {
			return deleted, err
		}
	}
	n, err := q.deleteQueueKeys(ctx)
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
)

// String returns "moved", "already due", "requeued" or "extra run".
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
		r, err := q.run(ctx, scriptRunNow, []string{q.itemKey(id)}, id, "", "", "")
		if err != nil {
			return RunNowResult{}, err
		}
		return runNowResult(id, r)
	}
	// The extra run's id carries the time it was asked for, by Redis.
	t, err := q.client.Time(ctx).Result()
	if err != nil {
		return RunNowResult{}, err
	}
	ms := dueMS(t)
	for range 4 {
		extra := occurrenceID(name, ms)
		r, err := q.run(ctx, scriptRunNow, []string{q.itemKey(id), q.recKey(name), q.itemKey(extra)}, id, name, extra, ms)
		if err != nil {
			return RunNowResult{}, err
		}
		if toInt(r[0]) == 5 { // that id is taken (an occurrence at that very ms)
			ms++
			continue
		}
		res, err := runNowResult(id, r)
		if res.Outcome == RunNowExtra {
			res.ID = extra
		}
		return res, err
	}
	return RunNowResult{}, errors.New("redisq: run now: no free id for the extra run; try again")
}

func runNowResult(id string, r []interface{}) (RunNowResult, error) {
	res := RunNowResult{ID: id}
	switch toInt(r[0]) {
	case 0:
		return RunNowResult{}, ErrNotFound
	case 2:
		return RunNowResult{}, ErrInFlight
	case 1:
		res.Outcome = RunNowMoved
	case 3:
		res.Outcome = RunNowRequeued
	case 4:
		res.Outcome = RunNowAlreadyDue
	case 6:
		res.Outcome = RunNowExtra
	default:
		return RunNowResult{}, fmt.Errorf("redisq: run now: unexpected reply %v", r)
	}
	res.Due = msTime(toMS(r[1]))
	return res, nil
}
