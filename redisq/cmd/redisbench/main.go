// Command redisbench measures redisq against a local Redis: enqueue
// throughput, end-to-end delivered+acked throughput, and delivery lateness
// (delivery time − due time) at a steady arrival rate.
//
//	redisbench -redis 127.0.0.1:6379 -rate 1000 -duration 10s -consumers 4
//
// Lateness is reported twice: by the Redis clock (the claim script's TIME
// minus the due time, millisecond resolution) and end to end (the consumer's
// receive instant mapped onto the Redis clock through an offset calibrated
// with TIME round trips). It uses queues named redisbench-* and deletes their
// keys when done. Point it at a scratch server: it needs maxmemory-policy
// noeviction.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dq-go/delayqueue/redisq"
	"github.com/redis/go-redis/v9"
)

func main() {
	addr := flag.String("redis", "127.0.0.1:6379", "Redis address")
	rate := flag.Int("rate", 1000, "steady arrival rate for the lateness phase (items/s)")
	dur := flag.Duration("duration", 10*time.Second, "length of the lateness phase")
	consumers := flag.Int("consumers", 4, "consumers in the delivery phases")
	n := flag.Int("n", 50000, "items in the throughput phases")
	delay := flag.Duration("delay", 100*time.Millisecond, "delay of each item in the lateness phase")
	flag.Parse()
	if err := run(*addr, *rate, *dur, *consumers, *n, *delay); err != nil {
		fmt.Fprintln(os.Stderr, "redisbench:", err)
		os.Exit(1)
	}
}

func run(addr string, rate int, dur time.Duration, consumers, n int, delay time.Duration) error {
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 2*consumers + 16})
	defer c.Close()
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		return err
	}
	ver := "?"
	for _, l := range splitLines(info) {
		if len(l) > 14 && l[:14] == "redis_version:" {
			ver = l[14:]
		}
	}
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	defer cleanup(c, "redisbench-"+run)
	fmt.Printf("redisbench: redis %s at %s, %d consumers\n", ver, addr, consumers)

	// 1. Enqueue throughput: 8 producers, items due in an hour.
	q1, err := redisq.New(ctx, c, "redisbench-"+run+"-enq")
	if err != nil {
		return err
	}
	rps := timed(8, n, func(i int) error {
		_, err := q1.EnqueueAfter(ctx, strconv.Itoa(i), []byte("payload"), time.Hour)
		return err
	})
	fmt.Printf("enqueue:            %8.0f items/s  (%d items, 8 producers, one EVALSHA each)\n", rps, n)
	_ = q1.Close()

	// 2. End-to-end: n due items drained by consumers with Take+Ack, then
	// again with TakeBatch(100)+AckMany.
	for _, batch := range []int{1, 100} {
		q, err := redisq.New(ctx, c, fmt.Sprintf("redisbench-%s-e2e%d", run, batch))
		if err != nil {
			return err
		}
		if rate := timed(8, n, func(i int) error {
			_, err := q.EnqueueAfter(ctx, strconv.Itoa(i), []byte("payload"), 0)
			return err
		}); rate == 0 {
			return fmt.Errorf("seeding failed")
		}
		var done atomic.Int64
		start := time.Now()
		dctx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		var firstErr atomic.Value
		for w := 0; w < consumers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					ms, err := q.TakeBatch(dctx, batch)
					if err != nil {
						if dctx.Err() == nil {
							firstErr.CompareAndSwap(nil, err)
							cancel()
						}
						return
					}
					if batch == 1 {
						err = ms[0].Ack(ctx)
					} else {
						for _, e := range q.AckMany(ctx, ms) {
							if e != nil {
								err = e
							}
						}
					}
					if err != nil {
						firstErr.CompareAndSwap(nil, err)
						cancel()
						return
					}
					if done.Add(int64(len(ms))) >= int64(n) {
						cancel()
					}
				}
			}()
		}
		wg.Wait()
		cancel()
		el := time.Since(start)
		if e, ok := firstErr.Load().(error); ok {
			return e
		}
		how := "Take+Ack"
		if batch > 1 {
			how = "TakeBatch(100)+AckMany"
		}
		fmt.Printf("delivered+acked:    %8.0f items/s  (%d items, %d consumers, %s)\n",
			float64(done.Load())/el.Seconds(), n, consumers, how)
		_ = q.Close()
	}

	// 3. Lateness at a steady rate.
	offset, rtt, err := calibrate(ctx, c)
	if err != nil {
		return err
	}
	q, err := redisq.New(ctx, c, "redisbench-"+run+"-late")
	if err != nil {
		return err
	}
	defer q.Close()
	var mu sync.Mutex
	var byRedis, e2e []float64
	cctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for w := 0; w < consumers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				m, err := q.Take(cctx)
				if err != nil {
					return
				}
				recv := time.Now().Add(offset)
				mu.Lock()
				byRedis = append(byRedis, float64(m.ClaimedAt.Sub(m.Due))/1e6)
				e2e = append(e2e, float64(recv.Sub(m.Due))/1e6)
				mu.Unlock()
				_ = m.Ack(ctx)
			}
		}()
	}
	total := int(float64(rate) * dur.Seconds())
	tick := time.Second / time.Duration(rate)
	start := time.Now()
	var perr error
	for i := 0; i < total; i++ {
		if d := time.Until(start.Add(time.Duration(i) * tick)); d > 0 {
			time.Sleep(d)
		}
		if _, err := q.EnqueueAfter(ctx, strconv.Itoa(i), []byte("payload"), delay); err != nil {
			perr = err
			break
		}
	}
	sent := time.Since(start)
	// Wait for the tail: everything enqueued is due within delay.
	deadline := time.Now().Add(delay + 5*time.Second)
	for time.Now().Before(deadline) {
		mu.Lock()
		got := len(byRedis)
		mu.Unlock()
		if got >= total {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	wg.Wait()
	if perr != nil {
		return perr
	}
	fmt.Printf("lateness @ %d/s:   %d items over %.1fs, delay %v, %d consumers (clock offset RTT %v)\n",
		rate, total, sent.Seconds(), delay, consumers, rtt.Round(time.Microsecond))
	fmt.Printf("  by Redis TIME (ms): %s\n", pct(byRedis))
	fmt.Printf("  end to end    (ms): %s\n", pct(e2e))
	sort.Float64s(e2e)
	verdict := "PASS"
	if len(e2e) < total || quant(e2e, 0.99) > 10 {
		verdict = "FAIL"
	}
	fmt.Printf("  delivered %d/%d; target p99 <= 10ms end to end: %s\n", len(e2e), total, verdict)
	st, err := q.Stats(ctx)
	if err == nil {
		fmt.Printf("  stats: counters %v, in flight %d, backlog %d\n", st.Counters, st.InFlight, st.DueBacklog)
	}
	return nil
}

// timed runs f(0..n-1) on workers goroutines and returns calls per second.
func timed(workers, n int, f func(int) error) float64 {
	var next atomic.Int64
	var failed atomic.Bool
	start := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n || failed.Load() {
					return
				}
				if err := f(i); err != nil {
					fmt.Fprintln(os.Stderr, "redisbench:", err)
					failed.Store(true)
					return
				}
			}
		}()
	}
	wg.Wait()
	if failed.Load() {
		return 0
	}
	return float64(n) / time.Since(start).Seconds()
}

// calibrate estimates redisTime − localTime from the TIME round trip with the
// smallest RTT, assuming the server read its clock mid-trip.
func calibrate(ctx context.Context, c *redis.Client) (time.Duration, time.Duration, error) {
	best := time.Duration(1<<62 - 1)
	var off time.Duration
	for i := 0; i < 200; i++ {
		t0 := time.Now()
		rt, err := c.Time(ctx).Result()
		t1 := time.Now()
		if err != nil {
			return 0, 0, err
		}
		if rtt := t1.Sub(t0); rtt < best {
			best = rtt
			off = rt.Sub(t0.Add(rtt / 2))
		}
	}
	return off, best, nil
}

func quant(s []float64, q float64) float64 {
	if len(s) == 0 {
		return 0
	}
	i := int(q * float64(len(s)-1))
	return s[i]
}

func pct(s []float64) string {
	sort.Float64s(s)
	return fmt.Sprintf("p50 %.2f  p90 %.2f  p99 %.2f  p99.9 %.2f  max %.2f",
		quant(s, 0.5), quant(s, 0.9), quant(s, 0.99), quant(s, 0.999), quant(s, 1))
}

func cleanup(c *redis.Client, prefix string) {
	ctx := context.Background()
	iter := c.Scan(ctx, 0, "{dq:"+prefix+"*", 1000).Iterator()
	var batch []string
	for iter.Next(ctx) {
		batch = append(batch, iter.Val())
		if len(batch) == 500 {
			c.Unlink(ctx, batch...)
			batch = batch[:0]
		}
	}
	if len(batch) > 0 {
		c.Unlink(ctx, batch...)
	}
}

func splitLines(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			l := s[start:i]
			if len(l) > 0 && l[len(l)-1] == '\r' {
				l = l[:len(l)-1]
			}
			out = append(out, l)
			start = i + 1
		}
	}
	return out
}
