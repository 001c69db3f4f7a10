package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/dq-go/delayqueue/redisq"
)

// cmdDead requeues (or deletes) the dead items named, or all with -all.
func cmdDead(e *env, requeue bool) error {
	verb, done := "delete", "deleted"
	if requeue {
		verb, done = "requeue", "requeued"
	}
	if given := btoi(e.all) + btoi(len(e.args) > 1) + btoi(e.reason.set); given != 1 {
		return usageErr("give item ids or -all or -reason, one of them, not %s", map[bool]string{true: "several", false: "none"}[given > 1])
	}
	t, err := e.target(e.args[0])
	if err != nil {
		return err
	}
	defer t.Close()
	if e.reason.set {
		return deadByReason(e, t, requeue)
	}
	if e.all {
		st, err := t.Stats(e.ctx)
		if err != nil {
			return err
		}
		all := "all "
		if st.Dead == 1 {
			all = "the "
		}
		if err := e.confirm(fmt.Sprintf("%s %s%s of %s? [y/N] ", verb, all, plural(st.Dead, "dead item"), t.label()), "y"); err != nil {
			return err
		}
		var n int64
		if requeue {
			n, err = t.RequeueAllDead(e.ctx)
		} else {
			n, err = t.DeleteAllDead(e.ctx)
		}
		err = partial(e, err, "dead items")
		if err == nil || n > 0 { // on an error, only what was done
			e.printf("%s %s of %s\n", done, plural(n, "dead item"), t.label())
		}
		return err
	}
	return eachID(e, t, func(q *redisq.Queue, id, in string) error {
		var err error
		if requeue {
			err = q.RequeueDead(e.ctx, id)
		} else {
			err = q.DeleteDead(e.ctx, id)
		}
		if err == nil {
			e.printf("%s %s%s\n", done, quote(id), in)
		}
		return err
	})
}

// partial explains an error that stopped a bulk operation midway: what
// was done was printed, the rest is as it was.
func partial(e *env, err error, rest string) error {
	if err != nil && e.partitionedEmpty(err) {
		return nil
	}
	if err != nil && errors.Is(e.ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("stopped after -timeout %v: the other %s are as they were; run it again, or give a larger -timeout (%w)", e.conn.timeout, rest, err)
	}
	return err
}

// partitionedEmpty reports whether err is a partitioned queue's
// ErrNoQueue from a call on every partition: none has data (a partition
// with no items has no keys), while the queue, opened from its partition
// table, exists. Nothing was there to change.
func (e *env) partitionedEmpty(err error) bool {
	return e.partitioned && errors.Is(err, redisq.ErrNoQueue)
}

// explain rewrites the refusal, by the Redis user's ACL, of a command a
// writing command's script needs: it says that the command changes the
// queue, which a read-only user cannot, rather than redisq's "allow it"
// (right for a reader missing a read, not for a reader asked to write).
func (e *env) explain(err error) error {
	var pe *redisq.PermissionError
	if e.cmd == nil || !e.cmd.write || !errors.As(err, &pe) || pe.Command == "" {
		return err
	}
	return fmt.Errorf("the Redis user may not change queue %s: dqctl %s needs %s, which it may not run; "+
		"run it as a user that may change queues (dqoperator in docs/operations.md): %w", quote(pe.Queue), e.cmd.name, pe.Command, pe.Err)
}

// errMarked: the in-flight item was marked by an earlier delete.
var errMarked = errors.New("already marked")

// eachID runs f for every id argument, on the queue that holds it: the
// queue, or the partition of a partitioned queue that holds the id (see
// locate), in is then " in PARTITION" for the message. It reports each
// failure. Its exit code is 3 when every failure was an unknown id or an
// item in the wrong state, else 1.
func eachID(e *env, t *target, f func(q *redisq.Queue, id, in string) error) error {
	failed, code := 0, exitNotFound
	for _, id := range e.args[1:] {
		q, in := t.q, ""
		var err error
		if t.p != nil {
			var i int
			if i, err = locate(e.ctx, t.p, id); err == nil {
				q, in = t.p.Partition(i), " in partition "+partitionName(t.p, i)
			}
		}
		if err == nil {
			err = f(q, id, in)
		}
		switch {
		case err == nil:
			continue
		case errors.Is(err, redisq.ErrNotFound):
			err = fmt.Errorf("no item %s in queue %s", quote(id), quote(t.Name()))
		case errors.Is(err, redisq.ErrNotDead):
			err = fmt.Errorf("item %s is not dead; nothing changed", quote(id))
		case errors.Is(err, redisq.ErrInFlight):
			err = fmt.Errorf("item %s is in flight: a consumer holds it (it is running now); nothing changed", quote(id))
		case errors.Is(err, errMarked):
			err = fmt.Errorf("item %s is in flight and already marked: deleted when its consumer settles it; nothing changed", quote(id))
		case e.ctx.Err() != nil:
			return err
		default: // a Redis error, or an id in several partitions
			code = exitError
			err = e.explain(err)
		}
		failed++
		fmt.Fprintf(e.stderr, "dqctl: %s\n", clean(err.Error()))
	}
	if failed == 0 {
		return nil
	}
	return &exitErr{code, fmt.Sprintf("%d of %d items failed", failed, len(e.args)-1)}
}

func cmdDelete(e *env) error {
	t, err := e.target(e.args[0])
	if err != nil {
		return err
	}
	defer t.Close()
	return eachID(e, t, func(q *redisq.Queue, id, in string) error {
		// An in-flight item marked before stays marked: say so, rather
		// than "marked" again. (GetPrefix with 0 reads no payload.)
		if it, err := q.GetPrefix(e.ctx, id, 0); err != nil {
			return err
		} else if it.State == redisq.StateInFlight && it.Cancelled {
			return errMarked
		}
		out, err := q.Cancel(e.ctx, id)
		switch {
		case err != nil:
			return err
		case out == redisq.CancelMarked:
			e.printf("marked %s%s: in flight; deleted when its consumer settles it, never retried\n", quote(id), in)
		default:
			e.printf("deleted %s%s\n", quote(id), in)
		}
		return nil
	})
}

func cmdPurge(e *env) error {
	state, err := parseState(e.args[1])
	if err != nil {
		return err
	}
	t, err := e.target(e.args[0])
	if err != nil {
		return err
	}
	defer t.Close()
	st, err := t.Stats(e.ctx)
	if err != nil {
		return err
	}
	n := map[redisq.State]int64{redisq.StateScheduled: st.Scheduled, redisq.StateInFlight: st.InFlight, redisq.StateDead: st.Dead, redisq.StateCompleted: st.Completed}[state]
	if err := e.confirm(fmt.Sprintf("purge %s of %s? [y/N] ", plural(n, state.String()+" item"), t.label()), "y"); err != nil {
		return err
	}
	n, err = t.Purge(e.ctx, state)
	what := "deleted"
	if state == redisq.StateInFlight {
		what = "marked"
	}
	err = partial(e, err, state.String()+" items")
	if err == nil || n > 0 { // on an error, only what was done
		e.printf("purged %s: %s %s\n", t.label(), what, plural(n, state.String()+" item"))
	}
	return err
}

// cmdPause pauses (or resumes) the queue's deliveries: a partitioned
// queue's on every partition. A partitioned queue is paused when every
// partition is, and running when none is; pause and resume act on one
// paused in part.
func cmdPause(e *env, pause bool) error {
	t, err := e.target(e.args[0])
	if err != nil {
		return err
	}
	defer t.Close()
	all, err := t.Paused(e.ctx)
	if err != nil {
		return err
	}
	some := all
	if t.p != nil && !all {
		for i := range t.p.NumPartitions() {
			b, err := t.p.Partition(i).Paused(e.ctx)
			if err != nil {
				return err
			}
			some = some || b
		}
	}
	switch {
	case pause && all:
		e.printf("%s is already paused; nothing changed\n", t.label())
	case !pause && !some:
		e.printf("%s is not paused; nothing changed\n", t.label())
	case pause:
		if err := t.Pause(e.ctx); err != nil {
			return err
		}
		e.printf("paused %s: consumers take nothing until dqctl resume; enqueues, acks and admin commands go on\n", t.label())
	default:
		if err := t.Resume(e.ctx); err != nil {
			return err
		}
		e.printf("resumed %s: consumers take due items again\n", t.label())
	}
	return nil
}

func cmdDestroy(e *env) error {
	t, err := e.target(e.args[0])
	if err != nil {
		return err
	}
	defer t.Close()
	st, err := t.Stats(e.ctx)
	if err != nil {
		return err
	}
	prompt := fmt.Sprintf("destroy %s on %s (%d scheduled, %d in flight, %d dead, %d completed, all counters)?\ntype the queue name to confirm: ",
		t.label(), e.conn.where(), st.Scheduled, st.InFlight, st.Dead, st.Completed)
	if err := e.confirm(prompt, t.Name()); err != nil {
		return err
	}
	n, err := t.Destroy(e.ctx)
	if errors.Is(err, redisq.ErrNoQueue) {
		return notFound("%s is already gone; nothing changed", t.label())
	}
	if err != nil {
		return err
	}
	e.printf("destroyed %s: %s deleted\n", t.label(), plural(n, "key"))
	return nil
}
