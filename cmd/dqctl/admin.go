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
	if e.all == (len(e.args) > 1) {
		return usageErr("give item ids or -all, not both or neither")
	}
	q, err := e.queue()
	if err != nil {
		return err
	}
	if e.all {
		st, err := q.Stats(e.ctx)
		if err != nil {
			return err
		}
		all := "all "
		if st.Dead == 1 {
			all = "the "
		}
		if err := e.confirm(fmt.Sprintf("%s %s%s of queue %s? [y/N] ", verb, all, plural(st.Dead, "dead item"), quote(q.Name())), "y"); err != nil {
			return err
		}
		var n int64
		if requeue {
			n, err = q.RequeueAllDead(e.ctx)
		} else {
			n, err = q.DeleteAllDead(e.ctx)
		}
		e.printf("%s %s of queue %s\n", done, plural(n, "dead item"), quote(q.Name()))
		return partial(e, err, "dead items")
	}
	return eachID(e, q, func(id string) error {
		var err error
		if requeue {
			err = q.RequeueDead(e.ctx, id)
		} else {
			err = q.DeleteDead(e.ctx, id)
		}
		if err == nil {
			e.printf("%s %s\n", done, quote(id))
		}
		return err
	})
}

// partial explains an error that stopped a bulk operation midway: what
// was done was printed, the rest is as it was.
func partial(e *env, err error, rest string) error {
	if err != nil && errors.Is(e.ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("stopped after -timeout %v: the other %s are as they were; run it again, or give a larger -timeout (%w)", e.conn.timeout, rest, err)
	}
	return err
}

// errMarked: the in-flight item was marked by an earlier delete.
var errMarked = errors.New("already marked")

// eachID runs f for every id argument and reports each failure. Its exit
// code is 3 when every failure was an unknown id or an item in the wrong
// state, else 1.
func eachID(e *env, q *redisq.Queue, f func(id string) error) error {
	failed, code := 0, exitNotFound
	for _, id := range e.args[1:] {
		err := f(id)
		switch {
		case err == nil:
			continue
		case errors.Is(err, redisq.ErrNotFound):
			err = fmt.Errorf("no item %s in queue %s", quote(id), quote(q.Name()))
		case errors.Is(err, redisq.ErrNotDead):
			err = fmt.Errorf("item %s is not dead; nothing changed", quote(id))
		case errors.Is(err, errMarked):
			err = fmt.Errorf("item %s is in flight and already marked: deleted when its consumer settles it; nothing changed", quote(id))
		case e.ctx.Err() != nil:
			return err
		default:
			code = exitError
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
	q, err := e.queue()
	if err != nil {
		return err
	}
	return eachID(e, q, func(id string) error {
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
			e.printf("marked %s: in flight; deleted when its consumer settles it, never retried\n", quote(id))
		default:
			e.printf("deleted %s\n", quote(id))
		}
		return nil
	})
}

func cmdPurge(e *env) error {
	state, err := parseState(e.args[1])
	if err != nil {
		return err
	}
	q, err := e.queue()
	if err != nil {
		return err
	}
	p, err := q.List(e.ctx, state, redisq.ListOptions{Limit: 1})
	if err != nil {
		return err
	}
	if err := e.confirm(fmt.Sprintf("purge %s of queue %s? [y/N] ", plural(p.Total, state.String()+" item"), quote(q.Name())), "y"); err != nil {
		return err
	}
	n, err := q.Purge(e.ctx, state)
	what := "deleted"
	if state == redisq.StateInFlight {
		what = "marked"
	}
	e.printf("purged queue %s: %s %s\n", quote(q.Name()), what, plural(n, state.String()+" item"))
	return partial(e, err, state.String()+" items")
}

// cmdPause pauses (or resumes) the queue's deliveries.
func cmdPause(e *env, pause bool) error {
	q, err := e.queue()
	if err != nil {
		return err
	}
	paused, err := q.Paused(e.ctx)
	if err != nil {
		return err
	}
	switch {
	case pause && paused:
		e.printf("queue %s is already paused; nothing changed\n", quote(q.Name()))
	case !pause && !paused:
		e.printf("queue %s is not paused; nothing changed\n", quote(q.Name()))
	case pause:
		if err := q.Pause(e.ctx); err != nil {
			return err
		}
		e.printf("paused queue %s: consumers take nothing until dqctl resume; enqueues, acks and admin commands go on\n", quote(q.Name()))
	default:
		if err := q.Resume(e.ctx); err != nil {
			return err
		}
		e.printf("resumed queue %s: consumers take due items again\n", quote(q.Name()))
	}
	return nil
}

func cmdDestroy(e *env) error {
	q, err := e.queue()
	if err != nil {
		return err
	}
	st, err := q.Stats(e.ctx)
	if err != nil {
		return err
	}
	prompt := fmt.Sprintf("destroy queue %s on %s (%d scheduled, %d in flight, %d dead, all counters)?\ntype the queue name to confirm: ",
		quote(q.Name()), e.conn.where(), st.Scheduled, st.InFlight, st.Dead)
	if err := e.confirm(prompt, q.Name()); err != nil {
		return err
	}
	n, err := q.Destroy(e.ctx)
	if errors.Is(err, redisq.ErrNoQueue) {
		return notFound("queue %s is already gone; nothing changed", quote(q.Name()))
	}
	if err != nil {
		return err
	}
	e.printf("destroyed queue %s: %s deleted\n", quote(q.Name()), plural(n, "key"))
	return nil
}
