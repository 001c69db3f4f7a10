package redisq_test

import (
	"context"
	"fmt"
	"time"

	"github.com/dq-go/delayqueue/redisq"
	"github.com/redis/go-redis/v9"
)

// exampleQueue returns a queue on a throwaway redis-server, and a function
// that closes the queue and stops the server. In a program, the client
// would talk to your Redis: redis.NewClient(&redis.Options{Addr: ...}).
func exampleQueue(name string, opts ...redisq.Option) (*redisq.Queue, func()) {
	addr, stop := redisq.StartTestServer()
	c := redis.NewClient(&redis.Options{Addr: addr})
	q, err := redisq.New(context.Background(), c, name, opts...)
	if err != nil {
		panic(err)
	}
	return q, func() { _ = q.Close(); _ = c.Close(); stop() }
}

// Listing what a queue holds, page by page, without disturbing it.
func ExampleQueue_List() {
	q, done := exampleQueue("emails")
	defer done()
	ctx := context.Background()

	for i, id := range []string{"welcome:1", "welcome:2", "reminder:1"} {
		_, _ = q.EnqueueAfter(ctx, id, []byte(`{"user":1}`), time.Duration(i+1)*time.Hour)
	}
	opt := redisq.ListOptions{Limit: 2}
	for {
		page, err := q.List(ctx, redisq.StateScheduled, opt)
		if err != nil {
			panic(err)
		}
		for _, it := range page.Items {
			fmt.Printf("%s %s due in %v, %d bytes\n", it.ID, it.State, it.Due.Sub(page.Now).Round(time.Hour), it.PayloadSize)
		}
		if page.Next < 0 {
			fmt.Println("total", page.Total)
			break
		}
		opt.Offset = page.Next
	}
	// Output:
	// welcome:1 scheduled due in 1h0m0s, 10 bytes
	// welcome:2 scheduled due in 2h0m0s, 10 bytes
	// reminder:1 scheduled due in 3h0m0s, 10 bytes
	// total 3
}

// Dead letters: why an item died, then reviving it or dropping it.
func ExampleQueue_RequeueDead() {
	q, done := exampleQueue("emails", redisq.WithMaxAttempts(1))
	defer done()
	ctx := context.Background()

	_, _ = q.EnqueueAfter(ctx, "a", []byte("to: nobody"), 0)
	_, _ = q.EnqueueAfter(ctx, "b", []byte("to: bob"), 0)
	ma, _ := q.Take(ctx)
	mb, _ := q.Take(ctx)
	r, _ := ma.NackWith(ctx, redisq.NackReason("mailbox unavailable"))
	fmt.Println("a:", r.Outcome)
	_, _ = mb.DeadLetter(ctx, "bad address")

	page, _ := q.List(ctx, redisq.StateDead, redisq.ListOptions{})
	for _, it := range page.Items {
		fmt.Printf("%s died after %d attempt(s): %s\n", it.ID, it.Attempts, it.DeadReason)
	}
	_ = q.RequeueDead(ctx, "a") // due now, attempts reset
	_ = q.DeleteDead(ctx, "b")
	it, _ := q.Get(ctx, "a")
	fmt.Println("a:", it.State, it.Attempts, string(it.Payload))
	_, err := q.Get(ctx, "b")
	fmt.Println("b:", err)
	// Output:
	// a: dead-lettered
	// a died after 1 attempt(s): max attempts: mailbox unavailable
	// b died after 1 attempt(s): bad address
	// a: scheduled 0 to: nobody
	// b: redisq: not found
}

// Stats has a field for every counter and state, and the lateness of
// deliveries as a histogram kept in Redis.
func ExampleQueue_Stats() {
	q, done := exampleQueue("emails")
	defer done()
	ctx := context.Background()

	_, _ = q.EnqueueAfter(ctx, "a", nil, 0)
	_, _ = q.EnqueueAfter(ctx, "b", nil, time.Hour)
	m, _ := q.Take(ctx)
	_ = m.Ack(ctx)

	st, _ := q.Stats(ctx)
	fmt.Printf("scheduled %d, in flight %d, dead %d\n", st.Scheduled, st.InFlight, st.Dead)
	fmt.Printf("enqueued %d, delivered %d, acked %d, nacked %d\n", st.Enqueued, st.Delivered, st.Acked, st.Nacked)
	fmt.Println("deliveries timed:", st.Lateness.Count())
	// Output:
	// scheduled 1, in flight 0, dead 0
	// enqueued 2, delivered 1, acked 1, nacked 0
	// deliveries timed: 1
}

// Schedule is an upsert: it creates the item or replaces its payload and
// due time in one atomic step.
func ExampleQueue_Schedule() {
	q, done := exampleQueue("reminders")
	defer done()
	ctx := context.Background()

	r, _ := q.ScheduleAfter(ctx, "order:7", []byte("v1"), time.Hour)
	fmt.Println("created:", r.Created)
	r, _ = q.ScheduleAfter(ctx, "order:7", []byte("v2"), 2*time.Hour)
	fmt.Println("created:", r.Created)
	it, _ := q.Get(ctx, "order:7")
	fmt.Println(string(it.Payload))
	// Output:
	// created: true
	// created: false
	// v2
}

// Listing the queues on a server, and destroying one of them.
func ExampleListQueues() {
	addr, stop := redisq.StartTestServer()
	defer stop()
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	for _, name := range []string{"emails", "emails:eu", "sms"} {
		q, _ := redisq.New(ctx, c, name)
		_, _ = q.EnqueueAfter(ctx, "x", nil, time.Hour)
		_ = q.Close()
	}
	names, _ := redisq.ListQueues(ctx, c)
	fmt.Println(names)

	q, _ := redisq.New(ctx, c, "emails")
	_, _ = q.Destroy(ctx)
	_, err := q.Destroy(ctx)
	fmt.Println(err)
	names, _ = redisq.ListQueues(ctx, c)
	fmt.Println(names)
	// Output:
	// [emails emails:eu sms]
	// redisq: no such queue
	// [emails:eu sms]
}
