package main

import (
	"fmt"
	"time"

	"github.com/dq-go/delayqueue/redisq"
)

// cmdRunNow runs the items named as soon as a consumer is free, never
// later than they would have run (redisq RunNow), saying per item what it
// did.
func cmdRunNow(e *env) error {
	t, err := e.target(e.args[0])
	if err != nil {
		return err
	}
	defer t.Close()
	// Redis TIME, for how long an item already due has waited.
	now, err := e.c.Time(e.ctx).Result()
	if err != nil {
		return err
	}
	return eachID(e, t, func(q *redisq.Queue, id, in string) error {
		res, err := q.RunNow(e.ctx, id)
		if err != nil {
			return err
		}
		e.printf("%s\n", runNowSays(res, id, in, now))
		return nil
	})
}

// runNowSays is what run-now did to the item id (in " in partition ...").
func runNowSays(res redisq.RunNowResult, id, in string, now time.Time) string {
	switch res.Outcome {
	case redisq.RunNowMoved:
		return fmt.Sprintf("made %s%s due now: it runs once the items already due have been taken", quote(id), in)
	case redisq.RunNowAlreadyDue:
		return fmt.Sprintf("%s%s already due (%s, %s): left in its place, ahead of the items due after it", quote(id), in, rel(res.Due, now), absTime(res.Due, now))
	case redisq.RunNowWaiting:
		return fmt.Sprintf("%s%s is due and waits for its rate slot (%s, %s): left in its place; the limit holds", quote(id), in, rel(res.Due, now), absTime(res.Due, now))
	case redisq.RunNowWaitingForPlace:
		return fmt.Sprintf("%s%s is due and waits for a place under its concurrency limit: left in its place; the limit holds", quote(id), in)
	case redisq.RunNowRequeued:
		return fmt.Sprintf("requeued %s%s (it was dead or completed): due now, attempts reset", quote(id), in)
	case redisq.RunNowExtra:
		name, at, _ := redisq.Occurrence(id)
		return fmt.Sprintf("%s%s is the next occurrence of recurring %s: extra run %s enqueued, due now; the scheduled run at %s (%s) stays",
			quote(id), in, quote(name), quote(res.ID), stamp(at), rel(at, now))
	}
	return fmt.Sprintf("%s%s: %s", quote(id), in, res.Outcome)
}
