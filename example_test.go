package delayqueue_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/dq-go/delayqueue"
)

// Unpaid orders are cancelled when their payment window closes; a payment
// that arrives in time removes the order's timeout.
func Example_orderTimeout() {
	q := delayqueue.New[string]()
	window := 2 * time.Millisecond // 15*time.Minute in real life

	pending := map[string]delayqueue.Handle{}
	for _, order := range []string{"order-1", "order-2", "order-3"} {
		h, err := q.OfferAfter(order, window)
		if err != nil {
			panic(err)
		}
		pending[order] = h
	}

	// order-2 is paid: its timeout must never fire.
	if order, ok := q.Remove(pending["order-2"]); ok {
		fmt.Println("paid:", order)
	}

	// The timeout worker cancels what is left, in deadline order.
	ctx := context.Background()
	for q.Len() > 0 {
		order, err := q.Take(ctx)
		if err != nil {
			panic(err)
		}
		fmt.Println("cancelled unpaid:", order)
	}

	// A late payment finds no timeout left to remove.
	_, ok := q.Remove(pending["order-1"])
	fmt.Println("order-1 still pending:", ok)
	// Output:
	// paid: order-2
	// cancelled unpaid: order-1
	// cancelled unpaid: order-3
	// order-1 still pending: false
}

// A failing job is retried with exponential backoff until it succeeds or
// runs out of attempts.
func Example_retryWithBackoff() {
	type job struct {
		name    string
		attempt int
	}
	q := delayqueue.New[job]()
	failuresLeft := map[string]int{"send-email": 2, "charge-card": 5}
	const maxAttempts = 4
	backoff := func(attempt int) time.Duration { return 100 * time.Microsecond << attempt }

	for _, name := range []string{"send-email", "charge-card"} {
		if _, err := q.Offer(job{name: name}, time.Now()); err != nil {
			panic(err)
		}
	}
	var log []string
	ctx := context.Background()
	for q.Len() > 0 {
		j, err := q.Take(ctx)
		if err != nil {
			panic(err)
		}
		j.attempt++
		if failuresLeft[j.name] > 0 {
			failuresLeft[j.name]--
			if j.attempt == maxAttempts {
				log = append(log, fmt.Sprintf("%s: attempt %d failed, giving up", j.name, j.attempt))
				continue
			}
			log = append(log, fmt.Sprintf("%s: attempt %d failed, retry in %v", j.name, j.attempt, backoff(j.attempt)))
			if _, err := q.OfferAfter(j, backoff(j.attempt)); err != nil {
				panic(err)
			}
			continue
		}
		log = append(log, fmt.Sprintf("%s: attempt %d succeeded", j.name, j.attempt))
	}
	// The two jobs interleave; sort for a stable listing.
	slices.Sort(log)
	for _, l := range log {
		fmt.Println(l)
	}
	// Output:
	// charge-card: attempt 1 failed, retry in 200µs
	// charge-card: attempt 2 failed, retry in 400µs
	// charge-card: attempt 3 failed, retry in 800µs
	// charge-card: attempt 4 failed, giving up
	// send-email: attempt 1 failed, retry in 200µs
	// send-email: attempt 2 failed, retry in 400µs
	// send-email: attempt 3 succeeded
}

// A consumer takes due items in batches of up to four, until the queue is
// closed.
func Example_batchConsumption() {
	q := delayqueue.New[int]()
	past := time.Now().Add(-time.Second) // due at once
	for i := range 10 {
		if _, err := q.Offer(i, past.Add(time.Duration(i))); err != nil {
			panic(err)
		}
	}
	if _, err := q.OfferAfter(99, time.Hour); err != nil { // not due: stays
		panic(err)
	}

	taken := make(chan int)
	done := make(chan struct{})
	go func() {
		defer close(done)
		var batch []int
		for {
			var err error
			batch, err = q.TakeBatch(context.Background(), batch[:0], 4)
			if errors.Is(err, delayqueue.ErrClosed) {
				fmt.Println("closed")
				return
			}
			fmt.Println("batch:", batch)
			taken <- len(batch)
		}
	}()
	for n := 0; n < 10; n += <-taken {
	}
	q.Close() // the due work is done
	<-done
	fmt.Println("left for Drain:", q.Drain())
	// Output:
	// batch: [0 1 2 3]
	// batch: [4 5 6 7]
	// batch: [8 9]
	// closed
	// left for Drain: [99]
}

// Consume ranges over items as they fall due.
func ExampleQueue_Consume() {
	q := delayqueue.New[string]()
	for i, s := range []string{"c", "a", "b"} {
		if _, err := q.OfferAfter(s, time.Duration(3-i)*time.Millisecond); err != nil {
			panic(err)
		}
	}
	ctx := context.Background()
	for s := range q.Consume(ctx) {
		fmt.Println(s)
		if q.Len() == 0 {
			break
		}
	}
	// Output:
	// b
	// a
	// c
}
