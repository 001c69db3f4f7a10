package main

import (
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
		if err := e.confirm(fmt.Sprintf("%s all %d dead items of queue %s? [y/N] ", verb, st.Dead, quote(q.Name())), "y"); err != nil {
			return err
		}
		var n int64
		if requeue {
			n, err = q.RequeueAllDead(e.ctx)
		} else {
			n, err = q.DeleteAllDead(e.ctx)
		}
		e.printf("%s %d dead items of queue %s\n", done, n, quote(q.Name()))
		return err
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
	if err := e.confirm(fmt.Sprintf("purge %d %s items of queue %s? [y/N] ", p.Total, state, quote(q.Name())), "y"); err != nil {
		return err
	}
	n, err := q.Purge(e.ctx, state)
	what := "deleted"
	if state == redisq.StateInFlight {
		what = "marked"
	}
	e.printf("purged queue %s: %s %d %s items\n", quote(q.Name()), what, n, state)
	return err
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
	e.printf("destroyed queue %s: %d keys deleted\n", quote(q.Name()), n)
	return nil
}
