package main

// The -redis mode: the scenario of run on redisq, whose schedule outlives
// the process and is shared by many. Paying is Cancel, which succeeds only
// while the order is still scheduled; the canceller Acks each expired order.
// exactlyonce_test.go runs cancellers in several processes against it.

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"time"

	"github.com/dq-go/delayqueue/dqprom"
	"github.com/dq-go/delayqueue/redisq"
	"github.com/redis/go-redis/v9"
)

// orderPayload is an order's payload in the queue; its deadline is the
// item's due time (Message.Due), which Redis computed from its own clock.
type orderPayload struct {
	Order int `json:"order"`
}

func orderID(n int) string { return fmt.Sprintf("order-%d", n) }

// runRedis runs the scenario of run on a fresh redisq queue at addr.
func runRedis(ctx context.Context, addr string, n int, timeout time.Duration, paidFrac float64, verbose bool, metrics string) (res result, err error) {
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	// A queue of its own per run, deleted at the end.
	q, err := redisq.New(ctx, c, fmt.Sprintf("ordertimeout-%d-%d", os.Getpid(), time.Now().UnixNano()))
	if err != nil {
		return res, fmt.Errorf("redis %s: %w", addr, err)
	}
	defer func() { _ = q.Close(); err = errors.Join(err, deleteQueue(q)) }()
	_, stopMetrics, err := serveMetrics(metrics, dqprom.NewRedisCollector(q))
	if err != nil {
		return res, err
	}
	defer stopMetrics()
	log := newEventLog(verbose)

	// The canceller. Lateness is on this host's clock, against a deadline
	// on the Redis server's: skewed by their difference if Redis runs elsewhere.
	expired := make(chan struct{}, n)
	cctx, stop := context.WithCancel(ctx)
	var cerr error
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		cerr = cancelOrders(cctx, q, func(m *redisq.Message, o orderPayload, took time.Time) {
			late := took.Sub(m.Due)
			res.late = append(res.late, late) // read once the canceller stopped
			log.printf("expired", "order %5d  payment timed out, cancelled %v after its deadline", o.Order, late.Round(time.Microsecond))
			expired <- struct{}{}
		})
	}()

	paid, err := placeOrders(ctx, q, n, timeout, paidFrac, log)
	for left := n - len(paid); err == nil && left > 0; left-- { // until every unpaid order is cancelled
		select {
		case <-expired:
		case <-stopped: // ctx is done, or cerr says why
			err = cmp.Or(ctx.Err(), errors.New("canceller stopped"))
		}
	}
	stop()
	<-stopped
	log.close()
	res.placed, res.paid, res.expired = n, len(paid), len(res.late)
	return res, errors.Join(err, cerr)
}

// placeOrders places n orders with random payment timeouts up to timeout
// (the seed of run, in whole milliseconds: redisq's resolution) and pays a
// fraction paidFrac of them at a random moment before their deadline. Once
// every payment has been tried, it returns the orders paid.
func placeOrders(ctx context.Context, q *redisq.Queue, n int, timeout time.Duration, paidFrac float64, log *eventLog) (paid []int, _ error) {
	var mu sync.Mutex
	var errs []error
	var paying sync.WaitGroup
	defer paying.Wait() // also when placing fails
	rng := rand.New(rand.NewPCG(1, 2))
	for id := range n {
		d := (time.Duration(rng.Int64N(int64(timeout))) + time.Millisecond).Truncate(time.Millisecond)
		payload, _ := json.Marshal(orderPayload{Order: id})
		if _, err := q.EnqueueAfter(ctx, orderID(id), payload, d); err != nil {
			return nil, fmt.Errorf("placing order %d: %w", id, err)
		}
		log.printf("placed", "order %5d  placed, pay within %v", id, d)
		if rng.Float64() >= paidFrac {
			continue
		}
		paying.Add(1)
		time.AfterFunc(time.Duration(rng.Int64N(int64(d))), func() {
			defer paying.Done()
			if ctx.Err() != nil {
				return // interrupted: pay no more
			}
			out, err := q.Cancel(ctx, orderID(id))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil && out == redisq.CancelRemoved:
				paid = append(paid, id)
				log.printf("paid", "order %5d  paid, timeout cancelled", id)
			case err == nil, errors.Is(err, redisq.ErrNotFound): // it expired first
			default:
				errs = append(errs, fmt.Errorf("paying order %d: %w", id, err))
			}
		})
	}
	paying.Wait()
	return paid, errors.Join(errs...)
}

// cancelOrders is a canceller: it takes each expired order, cancels it,
// Acks it and reports it with the instant Take returned, until ctx is done
// or q is closed.
func cancelOrders(ctx context.Context, q *redisq.Queue, cancelled func(m *redisq.Message, o orderPayload, took time.Time)) error {
	for {
		m, err := q.Take(ctx)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, redisq.ErrClosed) {
				return nil
			}
			return err
		}
		took := time.Now()
		var o orderPayload
		if err := json.Unmarshal(m.Payload, &o); err != nil {
			return fmt.Errorf("%s: bad payload: %w", m.ID, err)
		}
		// A real service cancels the order here, then Acks: even if ctx is
		// done meanwhile, as the order is ours. Ack deletes the item.
		actx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err = m.Ack(actx)
		cancel()
		if err != nil {
			return fmt.Errorf("ack %s: %w", m.ID, err)
		}
		cancelled(m, o, took)
	}
}

// deleteQueue removes every key of the queue (Destroy works after Close).
func deleteQueue(q *redisq.Queue) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := q.Destroy(ctx); err != nil && !errors.Is(err, redisq.ErrNoQueue) {
		return fmt.Errorf("deleting queue %s: %w", q.Name(), err)
	}
	return nil
}
