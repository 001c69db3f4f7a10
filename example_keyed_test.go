package delayqueue_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/dq-go/delayqueue"
)

// Unpaid orders time out by order ID: no handles to keep, no map of your
// own to keep in step with the queue.
func ExampleKeyed_orderTimeouts() {
	timeouts := delayqueue.NewKeyed[string, string]() // order ID -> customer
	window := 10 * time.Millisecond                   // 15*time.Minute in real life
	for _, o := range []struct{ id, customer string }{{"order-1", "alice"}, {"order-2", "bob"}, {"order-3", "carol"}} {
		if _, err := timeouts.ScheduleAfter(o.id, o.customer, window); err != nil {
			panic(err)
		}
	}

	// order-2 is paid: its timeout goes, by ID.
	if customer, ok := timeouts.Cancel("order-2"); ok {
		fmt.Println("paid: order-2 of", customer)
	}
	// carol asked for more time: the same ID gets a new deadline (upsert).
	replaced, _ := timeouts.ScheduleAfter("order-3", "carol", 2*window)
	fmt.Println("order-3 extended:", replaced)
	// A redelivered "order placed" event must not restart order-1's window.
	added, _ := timeouts.Add("order-1", "alice", time.Now().Add(time.Hour))
	fmt.Println("duplicate event added:", added)

	ctx := context.Background()
	for timeouts.Len() > 0 {
		id, customer, err := timeouts.Take(ctx)
		if err != nil {
			panic(err)
		}
		fmt.Println("cancel unpaid", id, "of", customer)
	}
	// A late payment finds no timeout left.
	_, ok := timeouts.Cancel("order-1")
	fmt.Println("order-1 still pending:", ok)
	// Output:
	// paid: order-2 of bob
	// order-3 extended: true
	// duplicate event added: false
	// cancel unpaid order-1 of alice
	// cancel unpaid order-3 of carol
	// order-1 still pending: false
}

// A retry scheduler keyed by job: a failed job comes back after an
// exponential backoff, and a job submitted again while it waits is not
// queued twice.
func ExampleKeyed_retryScheduler() {
	retries := delayqueue.NewKeyed[string, int]() // job -> attempt number
	failuresBeforeSuccess := map[string]int{"send-invoice": 0, "sync-users": 2, "resize-image": 9}
	const maxAttempts = 4
	backoff := time.Millisecond // doubles after each failure

	for _, job := range []string{"send-invoice", "sync-users", "resize-image"} {
		if _, err := retries.Schedule(job, 1, time.Now()); err != nil {
			panic(err)
		}
	}
	added, _ := retries.Add("sync-users", 1, time.Now()) // submitted twice
	fmt.Println("duplicate queued:", added)

	ctx := context.Background()
	for retries.Len() > 0 {
		job, attempt, err := retries.Take(ctx)
		if err != nil {
			panic(err)
		}
		switch {
		case attempt > failuresBeforeSuccess[job]:
			fmt.Printf("%s: done on attempt %d\n", job, attempt)
		case attempt == maxAttempts:
			fmt.Printf("%s: gave up after %d attempts\n", job, attempt)
		default:
			if _, err := retries.ScheduleAfter(job, attempt+1, backoff<<(attempt-1)); err != nil {
				panic(err)
			}
		}
	}
	// Output:
	// duplicate queued: false
	// send-invoice: done on attempt 1
	// sync-users: done on attempt 3
	// resize-image: gave up after 4 attempts
}

// Save the schedule on shutdown and restore it on the next start, with the
// same order and deadlines. Deadlines are saved as wall-clock times:
// monotonic clock readings do not survive a restart, and JSON keeps only
// the wall clock anyway.
func Example_snapshotRestore() {
	q := delayqueue.New[string]()
	start := time.Now().Add(time.Hour)
	for _, it := range []struct {
		v  string
		at time.Duration
	}{{"send reminder", 2 * time.Minute}, {"expire session", 0}, {"rotate key", 2 * time.Minute}} {
		if _, err := q.Offer(it.v, start.Add(it.at)); err != nil {
			panic(err)
		}
	}

	// Nothing is due, so Shutdown closes at once and returns every item.
	rest, err := q.Shutdown(context.Background())
	if err != nil {
		panic(err)
	}
	saved, err := json.Marshal(rest) // to a file, a database...
	if err != nil {
		panic(err)
	}

	// The next start.
	var entries []delayqueue.Entry[string]
	if err := json.Unmarshal(saved, &entries); err != nil {
		panic(err)
	}
	restored := delayqueue.New[string]()
	for _, e := range entries { // in delivery order, so ties keep their order
		if _, err := restored.Offer(e.Value, e.Deadline); err != nil {
			panic(err)
		}
	}
	for _, e := range restored.Snapshot() {
		fmt.Println(e.Deadline.Sub(start).Round(time.Millisecond), e.Value)
	}
	// Output:
	// 0s expire session
	// 2m0s send reminder
	// 2m0s rotate key
}

// Shutdown lets the worker finish what is due, then closes the queue and
// hands back what is not due yet, to save for the next start.
func Example_gracefulShutdown() {
	q := delayqueue.New[string]()
	now := time.Now()
	for _, it := range []struct {
		v  string
		at time.Time
	}{{"due a second ago", now.Add(-time.Second)}, {"due now", now}, {"due tomorrow", now.Add(24 * time.Hour)}} {
		if _, err := q.Offer(it.v, it.at); err != nil {
			panic(err)
		}
	}

	worker := make(chan struct{})
	go func() {
		defer close(worker)
		for v := range q.Consume(context.Background()) { // ends when the queue closes
			fmt.Println("handled:", v)
		}
	}()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rest, err := q.Shutdown(ctx)
	<-worker
	for _, e := range rest {
		fmt.Println("saved for later:", e.Value)
	}
	fmt.Println("err:", err)
	// Output:
	// handled: due a second ago
	// handled: due now
	// saved for later: due tomorrow
	// err: <nil>
}
