package redisq

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dq-go/delayqueue/redisq/internal/rdb"
)

// MaxBackfill is the most occurrences one Backfill enqueues: a larger
// range is refused, so that a typo in a date cannot flood the queue.
const MaxBackfill = 10_000

// BackfillResult is what Backfill did.
type BackfillResult struct {
	// Enqueued counts the occurrences whose items it enqueued; Existing
	// those it left because their item exists (scheduled, in flight, dead,
	// or completed and retained).
	Enqueued, Existing int
	// First and Last are the first and last occurrence of the range that
	// the series has passed (zero when there is none).
	First, Last time.Time
}

// Backfill runs again the past occurrences of registration name in
// [from, to): those that have come (by the Redis clock) and are before
// its latest occurrence enqueued (the watermark, Registration.Enqueued),
// which the series has passed, whether they ran, were skipped or were
// missed; from 1970 on. The item of each is enqueued due now, in
// the order of the occurrences, with the registration's payload and Job,
// under its own OccurrenceID; an occurrence whose item exists is left as
// it is, so Backfill can be called again safely. The occurrence policies
// (Overlap, CatchUpWindow) do not apply to them: to run them one at a
// time, give the registration's Job a LimitKey with a concurrency limit
// of 1 (SetConcurrencyLimit).
//
// It enqueues at most MaxBackfill occurrences, in scripts of 100, and
// returns an error, enqueuing nothing, for a larger range; ErrNotFound
// when there is no such registration; an error when its schedule cannot
// be computed here (Registration.SpecErr), or when the registration
// changes meanwhile (what was enqueued before stays: call it again). The
// paused and ended registrations can be backfilled.
func (q *Queue) Backfill(ctx context.Context, name string, from, to time.Time) (BackfillResult, error) {
	if err := checkRegName(name); err != nil {
		return BackfillResult{}, err
	}
	if q.isClosed() {
		return BackfillResult{}, ErrClosed
	}
	now, row, ok, err := q.db.RecGet(ctx, name)
	if err != nil {
		return BackfillResult{}, err
	}
	if !ok {
		return BackfillResult{}, ErrNotFound
	}
	sched, err := ParseSchedule(row.Spec)
	if err != nil {
		return BackfillResult{}, fmt.Errorf("redisq: Backfill %q: its schedule %q: %w", name, row.Spec, err)
	}
	// The occurrences in [from, to) before the watermark that have come
	// (the watermark may be ahead, FirstAt), from 1970 on: a zero from
	// would start where a Schedule's zero time means none.
	end := min(dueMS(to), row.At, now+1)
	start := max(dueMS(from), 0)
	var occ []rdb.Occurrence
	for c, ok, err := nextOccurrence(sched, start-1); ok || err != nil; c, ok, err = nextOccurrence(sched, c) {
		if err != nil {
			return BackfillResult{}, err
		}
		if c >= end {
			break
		}
		if len(occ) == MaxBackfill {
			return BackfillResult{}, fmt.Errorf("redisq: Backfill %q from %v to %v: more than MaxBackfill (%d) occurrences; split the range",
				name, from.UTC(), to.UTC(), MaxBackfill)
		}
		occ = append(occ, rdb.Occurrence{At: c, ID: occurrenceID(name, c)})
	}
	var res BackfillResult
	if len(occ) == 0 {
		return res, nil
	}
	res.First, res.Last = msTime(occ[0].At), msTime(occ[len(occ)-1].At)
	for len(occ) > 0 {
		page := occ[:min(len(occ), rdb.ScriptBatch)]
		occ = occ[len(page):]
		r, err := q.db.Backfill(ctx, name, row.Gen, page)
		if err != nil {
			return res, err
		}
		if r.Code != 1 {
			if r.Gen == 0 {
				return res, ErrNotFound
			}
			return res, errors.New("redisq: Backfill: the registration changed meanwhile; call it again")
		}
		res.Enqueued += r.Enqueued
		res.Existing += r.Existed
	}
	return res, nil
}
