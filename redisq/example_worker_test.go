package redisq_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/dq-go/delayqueue/redisq"
	"github.com/redis/go-redis/v9"
)

// A Worker runs a handler on every message of a queue: nil acks it, an
// error retries it after the backoff, SkipRetry dead-letters it at once
// with the error's text; leases are extended while a handler runs, and
// Shutdown lets running handlers finish (or hands their messages back when
// its ctx ends first).
func ExampleWorker() {
	q, done := exampleQueue("emails", redisq.WithMaxAttempts(5))
	defer done()
	ctx := context.Background()
	for _, id := range []string{"welcome:1", "welcome:2", "bad:3"} {
		_, _ = q.EnqueueAfter(ctx, id, []byte(`{"to":"a@example.com"}`), 0)
	}

	handled := make(chan struct{}, 3)
	w := redisq.NewWorker(q, func(ctx context.Context, m *redisq.Message) error {
		defer func() { handled <- struct{}{} }()
		if strings.HasPrefix(m.ID, "bad:") {
			return redisq.SkipRetry(errors.New("invalid address"))
		}
		fmt.Println("sent", m.ID, "attempt", m.Attempts)
		return nil // acked
	}, redisq.WorkerOptions{Concurrency: 1})
	stopped := make(chan error)
	go func() { stopped <- w.Run(ctx) }()

	for range 3 {
		<-handled
	}
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_ = w.Shutdown(sctx) // in a program: on SIGTERM
	fmt.Println("Run returned", <-stopped)

	page, _ := q.List(ctx, redisq.StateDead, redisq.ListOptions{})
	for _, it := range page.Items {
		fmt.Println("dead:", it.ID, it.DeadReason)
	}
	// Output:
	// sent welcome:1 attempt 1
	// sent welcome:2 attempt 1
	// Run returned <nil>
	// dead: bad:3 invalid address
}

// One Worker over several queues: with StrictPriority, the "critical"
// queue's due work goes first; without it, each queue gets the share of
// the handlers that its Weight says while both have work.
func ExampleNewMultiWorker() {
	addr, stop := redisq.StartTestServer()
	defer stop()
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	ctx := context.Background()
	critical, err := redisq.New(ctx, c, "critical")
	if err != nil {
		panic(err)
	}
	defer critical.Close()
	low, err := redisq.New(ctx, c, "low")
	if err != nil {
		panic(err)
	}
	defer low.Close()
	// Due a minute ago: all three are due when the worker starts.
	due := time.Now().Add(-time.Minute)
	_ = low.Enqueue(ctx, "digest:1", nil, due)
	_ = critical.Enqueue(ctx, "refund:1", nil, due)
	_ = critical.Enqueue(ctx, "refund:2", nil, due)

	handled := make(chan struct{}, 3)
	w := redisq.NewMultiWorker(func(ctx context.Context, m *redisq.Message) error {
		fmt.Println(m.QueueName(), m.ID)
		handled <- struct{}{}
		return nil
	}, redisq.WorkerOptions{Concurrency: 1, StrictPriority: true},
		redisq.WorkerQueue{Queue: critical, Weight: 6},
		redisq.WorkerQueue{Queue: low, Weight: 1})
	go func() { _ = w.Run(ctx) }()
	for range 3 {
		<-handled
	}
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_ = w.Shutdown(sctx)
	// Output:
	// critical refund:1
	// critical refund:2
	// low digest:1
}
