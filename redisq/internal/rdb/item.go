package rdb

import "context"

var (
	scriptCancel     = newScript("cancel", kSched, kDead, kStats).withRID().acked()
	scriptReschedule = newScript("reschedule", kSched, kDead, kWake, kStats, kSeq).acked()
	scriptSchedule   = newScript("schedule", kSched, kDead, kWake, kStats, kSeq).acked()
	scriptRunNow     = newScript("run_now", kSched, kDead, kWake, kStats, kSeq).acked()
)

// Found is what a call on one item found.
type Found int

const (
	NotFound Found = iota // no such item
	Done                  // it acted
	InFlight              // a consumer holds it; nothing changed (Cancel: marked)
)

// Cancel removes an item in any state, or marks a leased one
// (lua/cancel.lua).
func (r *Runner) Cancel(ctx context.Context, id string) (Found, error) {
	res, err := r.runOnce(ctx, scriptCancel, []string{r.Keys.Item(id)}, id)
	if err != nil {
		return 0, err
	}
	switch toInt(res[0]) {
	case 0:
		return NotFound, nil
	case 2:
		return InFlight, nil
	}
	return Done, nil
}

// Reschedule moves a scheduled item, or revives a dead one, to w
// (lua/reschedule.lua); due is the new due time (ms).
func (r *Runner) Reschedule(ctx context.Context, id string, w When) (f Found, due int64, err error) {
	res, err := r.run(ctx, scriptReschedule, []string{r.Keys.Item(id)}, id, w.mode(), w.V)
	if err != nil {
		return 0, 0, err
	}
	switch toInt(res[0]) {
	case 0:
		return NotFound, 0, nil
	case 2:
		return InFlight, 0, nil
	}
	return Done, toInt(res[1]), nil
}

// Upsert stores payload and job j under id due at w whatever the id's state but
// leased (lua/schedule.lua): InFlight changes nothing; created says whether
// the item is new; due is its due time (ms).
func (r *Runner) Upsert(ctx context.Context, id string, payload []byte, w When, j Job) (f Found, created bool, due int64, err error) {
	res, err := r.runOnce(ctx, scriptSchedule, []string{r.Keys.Item(id)}, j.args([]interface{}{id, payload, w.mode(), w.V})...)
	if err != nil {
		return 0, false, 0, err
	}
	switch toInt(res[0]) {
	case 2:
		return InFlight, false, 0, nil
	case 1:
		return Done, true, ToMS(res[1]), nil
	}
	return Done, false, ToMS(res[1]), nil
}

// RunNow outcomes (lua/run_now.lua).
type RunNowCode int

const (
	RunNowNotFound     RunNowCode = iota
	RunNowMoved                   // made due now
	RunNowInFlight                // a consumer holds it
	RunNowRequeued                // a dead item revived
	RunNowAlreadyDue              // left in its place
	RunNowTaken                   // the extra run's id exists: name it after another ms
	RunNowExtra                   // an extra run of the pending occurrence enqueued
	RunNowWaiting                 // due, waiting for its rate slot: left in its place
	RunNowWaitingPlace            // due, waiting for a place under its concurrency limit: left in its place
)

// RunNowArgs: an item to run now, and, when its id names the occurrence of
// a registration (Reg not empty), the extra run's id and due time (ms)
// should it be that registration's pending occurrence.
type RunNowArgs struct {
	ID       string
	Reg      string
	ExtraID  string
	ExtraDue int64
}

// RunNow makes an item due now without ever delaying it (see redisq's
// Queue.RunNow); due is its due time (ms) after.
func (r *Runner) RunNow(ctx context.Context, a RunNowArgs) (code RunNowCode, due int64, err error) {
	keys := []string{r.Keys.Item(a.ID)}
	args := []interface{}{a.ID, "", "", ""}
	if a.Reg != "" {
		keys = append(keys, r.Keys.Rec(a.Reg), r.Keys.Item(a.ExtraID))
		args = []interface{}{a.ID, a.Reg, a.ExtraID, a.ExtraDue}
	}
	res, err := r.run(ctx, scriptRunNow, keys, args...)
	if err != nil {
		return 0, 0, err
	}
	code = RunNowCode(toInt(res[0]))
	if code < RunNowNotFound || code > RunNowWaitingPlace {
		return 0, 0, errUnexpected("run now", res)
	}
	if len(res) > 1 {
		due = ToMS(res[1])
	}
	return code, due, nil
}
