// Command ordertimeout is the scenario delayqueue was built for: orders are
// placed with a payment timeout; an order paid in time is taken off the
// schedule with Remove, and every other order is cancelled the moment its
// timeout passes, by a consumer blocked in Take.
//
//	go run ./examples/ordertimeout
//	go run ./examples/ordertimeout -orders 20000 -timeout 2s -paid 0.7 -v
//
// With -redis the same scenario runs on the Redis backend, redisq (see
// redis.go): paying is Cancel, and the canceller Acks each expired order.
//
//	go run ./examples/ordertimeout -redis 127.0.0.1:6379
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/dq-go/delayqueue"
	"github.com/dq-go/delayqueue/dqprom"
)

type order struct {
	id       int
	deadline time.Time // when the unpaid order is cancelled
}

func main() {
	orders := flag.Int("orders", 2000, "orders to place")
	timeout := flag.Duration("timeout", time.Second, "longest payment timeout; each order gets a random one up to this")
	paidFrac := flag.Float64("paid", 0.6, "fraction of orders that pay before their timeout")
	verbose := flag.Bool("v", false, "print every event, not just the first few")
	redisAddr := flag.String("redis", "", "run the scenario on the Redis backend (redisq) at this `host:port`")
	metrics := flag.String("metrics", "", "serve Prometheus metrics of the queue at http://`host:port`/metrics while the scenario runs")
	flag.Usage = func() {
		fmt.Fprint(flag.CommandLine.Output(), "ordertimeout places orders with a payment timeout on a delay queue and cancels each unpaid one the moment its timeout passes.\n\nUsage: ordertimeout [flags]\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *orders <= 0 || *timeout <= 0 || *paidFrac < 0 || *paidFrac > 1 {
		fmt.Fprintln(os.Stderr, "ordertimeout: need -orders > 0, -timeout > 0 and 0 <= -paid <= 1")
		os.Exit(2)
	}
	var r result
	var err error
	if *redisAddr == "" {
		r, err = run(*orders, *timeout, *paidFrac, *verbose, *metrics)
	} else {
		// Ctrl-C still deletes the queue's keys.
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		r, err = runRedis(ctx, *redisAddr, *orders, *timeout, *paidFrac, *verbose, *metrics)
		stop()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "ordertimeout:", err)
		os.Exit(1)
	}
	fmt.Println(r)
}

type result struct {
	placed, paid, expired int
	late                  []time.Duration // per expired order: cancel time - deadline
}

func (r result) String() string {
	return fmt.Sprintf("placed %d, paid %d, expired %d, cancel lateness p50 %v p99 %v",
		r.placed, r.paid, r.expired, percentile(r.late, 0.50), percentile(r.late, 0.99))
}

func run(n int, timeout time.Duration, paidFrac float64, verbose bool, metrics string) (result, error) {
	q := delayqueue.New[order]()
	_, stopMetrics, err := serveMetrics(metrics, dqprom.NewQueueCollector(map[string]dqprom.StatsSource{"orders": q}))
	if err != nil {
		return result{}, err
	}
	defer stopMetrics()
	rng := rand.New(rand.NewPCG(1, 2))
	log := newEventLog(verbose)

	// The canceller: one goroutine that blocks until the next timeout.
	var res result
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			o, err := q.Take(context.Background())
			if errors.Is(err, delayqueue.ErrClosed) {
				return
			}
			late := time.Since(o.deadline)
			res.late = append(res.late, late)
			res.expired++
			log.printf("expired", "order %5d  payment timed out, cancelled %v after its deadline", o.id, late.Round(time.Microsecond))
		}
	}()

	// Place the orders, and plan which ones pay and when.
	type payment struct {
		at     time.Duration // since start
		handle delayqueue.Handle
		id     int
	}
	var payments []payment
	start := time.Now()
	for id := range n {
		d := time.Duration(rng.Int64N(int64(timeout))) + time.Millisecond
		o := order{id: id, deadline: start.Add(d)}
		h, err := q.Offer(o, o.deadline)
		if err != nil {
			panic(err) // unbounded and open: cannot happen
		}
		res.placed++
		log.printf("placed", "order %5d  placed, pay within %v", id, d.Round(time.Millisecond))
		if rng.Float64() < paidFrac {
			// Pays at a random moment before its deadline.
			payments = append(payments, payment{at: time.Duration(rng.Int64N(int64(d))), handle: h, id: id})
		}
	}

	// The payment service: pays in time order; Remove takes the order off
	// the schedule. Remove reports false if the canceller got there first.
	slices.SortFunc(payments, func(a, b payment) int { return int(a.at - b.at) })
	for _, p := range payments {
		time.Sleep(time.Until(start.Add(p.at)))
		if _, ok := q.Remove(p.handle); ok {
			res.paid++
			log.printf("paid", "order %5d  paid, timeout cancelled", p.id)
		}
	}

	// Wait out the longest timeout, then stop the canceller.
	for q.Len() > 0 {
		_, at, _ := q.Peek()
		time.Sleep(time.Until(at) + time.Millisecond)
	}
	q.Close()
	wg.Wait()
	log.close()
	return res, nil
}

// eventLog prints the first few events of each kind, or all of them in
// verbose mode.
type eventLog struct {
	mu      sync.Mutex
	verbose bool
	printed map[string]int
	skipped int
}

const quietEvents = 3 // per kind

func newEventLog(verbose bool) *eventLog {
	return &eventLog{verbose: verbose, printed: map[string]int{}}
}

func (l *eventLog) printf(kind, format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.verbose && l.printed[kind] >= quietEvents {
		l.skipped++
		return
	}
	l.printed[kind]++
	fmt.Printf(format+"\n", args...)
}

func (l *eventLog) close() {
	if l.skipped > 0 {
		fmt.Printf("... %d more events (-v prints them all)\n", l.skipped)
	}
}

// percentile returns the p-quantile of ds (nearest rank), 0 if empty.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(p*float64(len(s))+0.5) - 1
	return s[min(max(i, 0), len(s)-1)].Round(time.Microsecond)
}
