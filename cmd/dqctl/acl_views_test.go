package main

import (
	"context"
	"testing"
	"time"

	"github.com/dq-go/delayqueue/redisq"
)

// TestACLOperatorViews runs the operator's views of issue 24 with the ACL
// users of docs/operations.md: dqreader reads the workers and the dead
// letters by reason, dqoperator runs items now and requeues and deletes a
// group.
func TestACLOperatorViews(t *testing.T) {
	f := newFixture(t, "orders")
	ctx := context.Background()
	for _, args := range aclLines(t) {
		if err := f.c.Do(ctx, args...).Err(); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
	}
	as := func(user string) []string { return []string{"-redis", f.addr, "-user", user, "-password", "pw"} }
	if _, err := f.q.EnqueueAfter(ctx, "now", nil, 0); err != nil {
		t.Fatal(err)
	}
	startWorker(t, f.q, "consumer", 1)
	waitWorkers(t, f.q, "the worker beats", func(ws []redisq.WorkerInfo) bool { return running(ws)["consumer"] == 1 })

	r := as("dqreader")
	dqctl(t, "", append(r, "workers", "orders")...).want(t, exitOK, "1 live worker")
	dqctl(t, "", append(r, "reasons", "orders")...).want(t, exitOK, `"bad address"`)
	dqctl(t, "", append(r, "list", "orders", "dead", "-reason", "bad address")...).want(t, exitOK, "d2 ")
	dqctl(t, "", append(r, "queues", "-sort", "failed")...).want(t, exitOK, "orders ")
	res := dqctl(t, "", append(r, "run-now", "orders", "s1")...)
	if res.code != exitError {
		t.Errorf("run-now as dqreader: exit %d\n%s", res.code, res.stderr)
	}

	o := as("dqoperator")
	dqctl(t, "", append(o, "run-now", "orders", "s1", "d1")...).want(t, exitOK, `made "s1" due now`, `requeued "d1" (it was dead or completed)`)
	if _, err := f.q.Register(ctx, "daily", redisq.Every(24*time.Hour), nil); err != nil {
		t.Fatal(err)
	}
	g, err := f.q.Registration(ctx, "daily")
	if err != nil {
		t.Fatal(err)
	}
	dqctl(t, "", append(o, "run-now", "orders", g.EnqueuedID)...).want(t, exitOK, "extra run")
	f.kill(t, "x", 2, "why")
	dqctl(t, "", append(o, "requeue", "orders", "-reason", "why", "-yes")...).want(t, exitOK, "requeued 2 dead items")
	dqctl(t, "", append(o, "delete-dead", "orders", "-reason", "bad address", "-yes")...).want(t, exitOK, "deleted 1 dead item")
	f.audit(t)
}
