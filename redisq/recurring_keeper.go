package redisq

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/dq-go/delayqueue/redisq/internal/rdb"
)

// keeperRefresh bounds how long a keeper goes without reading every
// registration again (one list script per 100 registrations), besides the
// reads the change feed triggers.
const keeperRefresh = time.Minute

// keeperFeedWait is how long one XREAD of the change feed blocks.
const keeperFeedWait = 30 * time.Second

// keeperHook, when set (by the tests' helper processes only), is called
// after each pass of a keeper over the due registrations.
var keeperHook func(q *Queue)

// KeepRecurring keeps the queue's recurring registrations (see Register)
// going until ctx ends (it returns nil) or the Queue is closed (ErrClosed;
// Close waits for it to return): when a registration's last occurrence
// enqueued falls due, it enqueues the next one, due at its time, so that
// the queue delivers it on time. Any number of processes may run it, at
// once or in turns, with no leader: each occurrence is enqueued exactly
// once, and none is missed while one of them runs. Every Worker runs it;
// call it yourself (in a goroutine) in a process that consumes otherwise.
// One per Queue value is enough; more are harmless.
//
// It wakes when the last occurrence enqueued of some registration falls
// due (by a local timer: a registration's next occurrence is enqueued a
// period ahead, so the timer's lateness does not delay deliveries), runs
// one script per registration then, and no other command on the way but
// an XREAD of the change feed {dq:NAME}:recx, blocked for up to 30 s (one
// connection of the wait client, see WithWaitClient), which wakes it when
// a registration is created, changed or removed; it also reads every
// registration again once a minute. So n processes cost n scripts per
// occurrence, n-1 of which find it done and write nothing.
//
// Occurrences that come while no keeper runs are missed: the first keeper
// back applies the registration's catch-up policy (CatchUp) from the last
// occurrence enqueued. A registration whose schedule this process cannot
// compute (written by a later version, or a zone missing here) is logged
// once and left to the others. Redis errors are logged, and retried after
// a pause (10ms, doubling up to 1s).
func (q *Queue) KeepRecurring(ctx context.Context) error {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return ErrClosed
	}
	q.active.Add(1)
	q.mu.Unlock()
	defer q.active.Done()

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(q.closeCtx, func() { cancel(ErrClosed) })
	defer stop()

	k := &keeper{
		q:      q,
		regs:   map[string]*keptReg{},
		specs:  map[string]specParse{},
		warned: map[string]int64{},
		priv:   q.wpref + "k" + strconv.FormatUint(q.waitSeq.Add(1), 10),
	}
	k.run(ctx)
	if errors.Is(context.Cause(ctx), ErrClosed) {
		return ErrClosed
	}
	return nil
}

// keeper is one KeepRecurring call.
type keeper struct {
	q      *Queue
	regs   map[string]*keptReg
	specs  map[string]specParse // ParseSchedule by text, for every registration read
	warned map[string]int64     // registration -> generation whose spec error was logged
	priv   string               // this keeper's private stream, which ends its XREAD
	// The Redis clock: base ms read at local baseAt.
	base   int64
	baseAt time.Time
	pause  time.Duration // after a failure: the next pause
}

// keptReg is what a keeper knows of a registration.
type keptReg struct {
	name    string
	sched   Schedule // nil: not computable here
	catchUp int
	window  int64 // CatchUpWindow in ms (0: none)
	gen, at int64
	ended   bool
}

type specParse struct {
	s   Schedule
	err error
}

// setNow records Redis TIME ms, as a script returned it.
func (k *keeper) setNow(ms int64) { k.base, k.baseAt = ms, time.Now() }

// now is Redis TIME as last read plus the local time since, rounded down:
// at most the Redis clock, give or take the drift between the two clocks
// since the last script (the scripts check what matters by TIME).
func (k *keeper) now() int64 { return k.base + time.Since(k.baseAt).Milliseconds() }

func (k *keeper) run(ctx context.Context) {
	changes := make(chan struct{}, 1)
	var watcher sync.WaitGroup
	started := false
	defer func() {
		if started {
			c, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			_ = k.q.db.StopFeed(c, k.priv)
			cancel()
			watcher.Wait()
		}
	}()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	reread := true
	var lastRead, seenAt time.Time
	for ctx.Err() == nil {
		if reread {
			feedID, err := k.readAll(ctx)
			if err != nil {
				k.fail(ctx, "reading the registrations", err)
				continue
			}
			reread, lastRead = false, time.Now()
			if seenAt.IsZero() || time.Since(seenAt) >= seenEvery {
				if err := k.q.markSeen(ctx); err != nil {
					k.q.opt.logger.Debug("redisq: keeping recurring registrations: recording them as seen", "queue", k.q.name, "err", err)
				} else {
					seenAt = time.Now()
				}
			}
			if !started {
				started = true
				watcher.Add(1)
				go func() {
					defer watcher.Done()
					k.watch(ctx, feedID, changes)
				}()
			}
		}
		again, err := k.advanceDue(ctx)
		if keeperHook != nil {
			keeperHook(k.q)
		}
		if err != nil {
			k.fail(ctx, "enqueuing occurrences", err)
			reread = true
			continue
		}
		k.pause = 0
		if again {
			reread = true
			continue
		}
		wait := max(keeperRefresh-time.Since(lastRead), 0)
		if at, ok := k.nextDue(); ok {
			wait = min(wait, time.Duration(max(at-k.now(), 0))*time.Millisecond)
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
		case <-changes:
			reread = true
		case <-timer.C:
			if time.Since(lastRead) >= keeperRefresh {
				reread = true
			}
		}
		timer.Stop()
	}
}

// fail logs err and pauses (10ms, doubling up to 1s) unless ctx ends.
func (k *keeper) fail(ctx context.Context, what string, err error) {
	if ctx.Err() != nil {
		return
	}
	k.pause = min(max(2*k.pause, 10*time.Millisecond), time.Second)
	k.q.opt.logger.Warn("redisq: keeping recurring registrations: "+what, "queue", k.q.name, "err", err, "retry_in", k.pause)
	t := time.NewTimer(k.pause)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// watch blocks on the change feed (from entry id after) and this keeper's
// private stream, and signals changes for every new entry of the feed,
// until the private stream gets one (or ctx ends and a read fails).
func (k *keeper) watch(ctx context.Context, after string, changes chan<- struct{}) {
	var pause time.Duration
	for {
		fr, err := k.q.db.ReadFeed(ctx, k.q.wait, k.priv, after, keeperFeedWait)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			pause = min(max(2*pause, 10*time.Millisecond), time.Second)
			k.q.opt.logger.Debug("redisq: keeping recurring registrations: reading the change feed", "queue", k.q.name, "err", err)
			t := time.NewTimer(pause)
			select {
			case <-ctx.Done():
			case <-t.C:
			}
			t.Stop()
			continue
		}
		pause = 0
		if fr.Stopped {
			return
		}
		if fr.Last != "" {
			after = fr.Last
			select {
			case changes <- struct{}{}:
			default:
			}
		}
	}
}

// readAll reads every registration into k.regs and returns the change
// feed's last entry id at the start.
func (k *keeper) readAll(ctx context.Context) (string, error) {
	rows, now, feedID, err := k.q.listRegs(ctx)
	if err != nil {
		return "", err
	}
	k.setNow(now)
	regs := make(map[string]*keptReg, len(rows))
	specs := make(map[string]specParse, len(k.specs))
	for _, row := range rows {
		sp, ok := specs[row.Spec]
		if !ok {
			if sp, ok = k.specs[row.Spec]; !ok {
				s, err := ParseSchedule(row.Spec)
				sp = specParse{s, err}
			}
			specs[row.Spec] = sp
		}
		if sp.err != nil && k.warned[row.Name] != row.Gen {
			k.warned[row.Name] = row.Gen
			k.q.opt.logger.Warn("redisq: recurring registration not kept by this process: its schedule cannot be computed here",
				"queue", k.q.name, "registration", row.Name, "spec", row.Spec, "err", sp.err)
		}
		regs[row.Name] = &keptReg{name: row.Name, sched: sp.s, catchUp: row.CatchUp, gen: row.Gen, at: row.At, ended: row.Ended || row.Paused > 0,
			window: parseOccPolicy(row.Job.Occurrence).window.Milliseconds()}
	}
	k.regs, k.specs = regs, specs
	return feedID, nil
}

// nextDue returns the earliest watermark among the registrations this
// keeper keeps.
func (k *keeper) nextDue() (int64, bool) {
	var at int64
	found := false
	for _, r := range k.regs {
		if r.sched != nil && !r.ended && (!found || r.at < at) {
			at, found = r.at, true
		}
	}
	return at, found
}

// advanceDue runs the advance script for every registration whose
// watermark has come. again is set when a registration changed under it
// (read them all again).
func (k *keeper) advanceDue(ctx context.Context) (again bool, err error) {
	for _, r := range k.regs {
		if r.sched == nil || r.ended || r.at > k.now() {
			continue
		}
		// A few rounds: a plan computed from a clock behind Redis's is
		// refused (code 3), and another keeper may move the watermark.
		for range 3 {
			done, changed, err := k.advance(ctx, r)
			if err != nil {
				return false, err
			}
			if changed {
				again = true
			}
			if done || changed {
				break
			}
		}
	}
	return again, nil
}

// advance runs the advance script once for r. done: r is up to date (its
// watermark is its next occurrence, not yet due, or it ended); changed:
// its definition changed or it is gone (read the registrations again).
func (k *keeper) advance(ctx context.Context, r *keptReg) (done, changed bool, err error) {
	occ, skip, hasSkip, end, err := k.plan(r, k.now())
	if err != nil {
		// A Schedule that misbehaves: leave the registration to others.
		k.q.opt.logger.Error("redisq: recurring registration not kept by this process", "queue", k.q.name,
			"registration", r.name, "err", err)
		r.sched = nil
		return true, false, nil
	}
	a := rdb.AdvanceArgs{Name: r.name, Gen: r.gen, At: r.at, Skip: skip, HasSkip: hasSkip, End: end}
	for _, o := range occ {
		a.Occ = append(a.Occ, rdb.Occurrence{At: o, Due: occurrenceDue(r.sched, r.name, o), ID: occurrenceID(r.name, o)})
	}
	res, err := k.q.db.Advance(ctx, a)
	if err != nil {
		return false, false, err
	}
	k.setNow(res.Now)
	switch res.Code {
	case 1:
		if len(occ) > 0 {
			r.at = occ[len(occ)-1]
		}
		r.ended = end
		return r.ended || r.at > k.now(), false, nil
	case 0:
		if res.Gen != r.gen {
			return false, true, nil
		}
		r.at, r.ended = res.At, res.Ended
		return r.ended || r.at > k.now(), false, nil
	case 2:
		return true, false, nil // not due yet by Redis: wait for it
	}
	return false, false, nil // 3: compute again from the clock just read
}

// plan returns the occurrences to enqueue after r's watermark, which has
// come, at Redis time now: the next one if it has not come yet; else up to
// r.catchUp missed ones, oldest first, then the first after now, skipping
// the rest (skip is the first of them, which the script checks has come).
// Missed ones due more than r.window before now are skipped too.
// end: the schedule has no occurrence after the last one planned.
func (k *keeper) plan(r *keptReg, now int64) (occ []int64, skip int64, hasSkip, end bool, err error) {
	c, ok, err := nextOccurrence(r.sched, r.at)
	if err != nil || !ok {
		return nil, 0, false, !ok, err
	}
	if r.window > 0 && occurrenceDue(r.sched, r.name, c) < now-r.window {
		// Due before the catch-up window: go on from the first one due in
		// it (found in a few steps, however many were missed: from the
		// first that its jitter could make due in it).
		skip, hasSkip = c, true
		from := now - r.window - 1
		if j, ok := r.sched.(Jittered); ok {
			from -= j.Max.Milliseconds()
		}
		if c, ok, err = nextOccurrence(r.sched, max(from, r.at)); err != nil || !ok {
			return nil, skip, true, !ok, err
		}
		for c <= now && occurrenceDue(r.sched, r.name, c) < now-r.window {
			if c, ok, err = nextOccurrence(r.sched, c); err != nil || !ok {
				return nil, skip, true, !ok, err
			}
		}
	}
	for c <= now && len(occ) < r.catchUp {
		occ = append(occ, c)
		if c, ok, err = nextOccurrence(r.sched, c); err != nil || !ok {
			return occ, skip, hasSkip, !ok, err
		}
	}
	if c > now {
		return append(occ, c), skip, hasSkip, false, nil
	}
	if !hasSkip {
		skip, hasSkip = c, true
	}
	n, ok, err := nextOccurrence(r.sched, now)
	if err != nil || !ok {
		return occ, skip, true, !ok, err
	}
	return append(occ, n), skip, true, false, nil
}

// markSeen records the registrations this Queue value registered as seen,
// one script per regPage of them.
func (q *Queue) markSeen(ctx context.Context) error {
	q.regMu.Lock()
	names := make([]string, 0, len(q.registered))
	for n := range q.registered {
		names = append(names, n)
	}
	q.regMu.Unlock()
	for len(names) > 0 {
		page := names[:min(len(names), regPage)]
		names = names[len(page):]
		if err := q.db.Seen(ctx, page); err != nil {
			return err
		}
	}
	return nil
}
