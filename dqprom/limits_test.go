package dqprom_test

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dq-go/delayqueue/dqprom"
	"github.com/dq-go/delayqueue/redisq"
	"github.com/dq-go/delayqueue/redisq/redistest"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"
)

// commands counts the commands (and pipelines) a client sends: its round
// trips.
type commands struct{ n atomic.Int64 }

func (h *commands) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *commands) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { h.n.Add(1); return next(ctx, cmd) }
}
func (h *commands) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { h.n.Add(1); return next(ctx, cmds) }
}

// limitedQueue sets a rate limit of 1 an hour and a concurrency limit of
// 1 on each of keys tenant:0000 to tenant:KEYS-1 of queue "tenants", and
// makes items wait: waiting[k] under the rate limit of key tenant:k+rate
// and under the concurrency limit of tenant:k+conc (a claim takes one
// item of each key, the others wait).
func limitedQueue(t testing.TB, c *redis.Client, keys int, waiting map[int]int) *redisq.Queue {
	t.Helper()
	ctx := context.Background()
	q := newQueue(t, c, "tenants")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := range keys {
		must(q.SetRateLimit(ctx, fmt.Sprintf("tenant:%04d:rate", i), redisq.RateLimit{N: 1, Per: time.Hour}))
		must(q.SetConcurrencyLimit(ctx, fmt.Sprintf("tenant:%04d:conc", i), 1))
	}
	for k, n := range waiting {
		for _, kind := range []string{"rate", "conc"} {
			for j := range n + 1 {
				key := fmt.Sprintf("tenant:%04d:%s", k, kind)
				_, err := q.Add(ctx, redisq.EnqueueItem{ID: fmt.Sprintf("%s#%d", key, j), At: time.Unix(1, 0), Job: redisq.Job{LimitKey: key}})
				must(err)
			}
		}
	}
	for {
		tctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		_, err := q.TakeBatch(tctx, 1000)
		cancel()
		if err != nil {
			return q
		}
	}
}

// TestRedisLimitsBusiestFirst (issue 41, item 10): the exporter showed
// the first 100 limit keys of a queue by name and said nothing of the
// rest, so a tenant past them with items waiting was invisible to
// alerts, while each scrape read every key's state. Now the 100 keys of
// each kind with the most waiting items have series, and series per
// queue count the keys, those without a series and the items they hold,
// and the keys past WithLimitScan that the scrape did not read; a
// scrape's round trips are bounded by the scan, not by the keys.
func TestRedisLimitsBusiestFirst(t *testing.T) {
	s := redistest.New(t)
	c := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer c.Close()
	// 2,000 keys of each kind; 105 with 1 waiting item, spread over the
	// names, and tenant:1999 with 5.
	const keys = 2000
	waiting := map[int]int{1999: 5}
	for i := range 105 {
		waiting[i*19] = 1
	}
	q := limitedQueue(t, c, keys, waiting)

	col := dqprom.NewRedisCollector(q)
	_, body := served(t, col)
	wantLines(t, body, `redisq_rate_limit_waiting_items{key="tenant:1999:rate",queue="tenants"} 5`,
		`redisq_concurrency_waiting_items{key="tenant:1999:conc",queue="tenants"} 5`,
		`redisq_rate_limit_keys{queue="tenants"} 2000`, `redisq_rate_limit_omitted_keys{queue="tenants"} 1900`,
		`redisq_rate_limit_omitted_waiting_items{queue="tenants"} 6`, `redisq_rate_limit_unread_keys{queue="tenants"} 0`,
		`redisq_concurrency_limit_keys{queue="tenants"} 2000`, `redisq_concurrency_limit_omitted_keys{queue="tenants"} 1900`,
		`redisq_concurrency_limit_omitted_waiting_items{queue="tenants"} 6`, `redisq_concurrency_limit_unread_keys{queue="tenants"} 0`)
	for _, m := range []string{"redisq_rate_limit_waiting_items", "redisq_rate_limit_claims", "redisq_concurrency_waiting_items"} {
		series := regexp.MustCompile(`(?m)^`+m+`\{key="([^"]*)",queue="tenants"\} (\d+)$`).FindAllStringSubmatch(body, -1)
		if len(series) != dqprom.LimitSeries {
			t.Errorf("%s: %d series, want %d", m, len(series), dqprom.LimitSeries)
		}
		idle := 0
		for _, s := range series {
			if m != "redisq_rate_limit_claims" && s[2] == "0" {
				idle++
			}
		}
		if idle > 0 {
			t.Errorf("%s: %d series of idle keys while keys with waiting items have none", m, idle)
		}
	}

	// The cost: the scrape's round trips, scripts loaded: Stats, then for
	// each kind an HSCAN and a script per 500 keys read, and a script per
	// 50 of the 100 busiest; with a bound, no more keys than it says.
	hook := &commands{}
	c.AddHook(hook)
	for _, b := range []struct {
		scan, unread int
	}{{dqprom.DefaultLimitScan, 0}, {1000, keys - 1000}, {0, 0}} {
		col := dqprom.NewRedisCollectorWithOptions([]*redisq.Queue{q}, dqprom.WithLimitScan(b.scan))
		served(t, col) // loads the scripts
		hook.n.Store(0)
		_, body := served(t, col)
		read := keys
		if b.scan > 0 {
			read = min(keys, b.scan)
		}
		// HSCAN gives at least the 500 keys asked but at the end, which
		// may take one more page, empty: one more HSCAN.
		if got, most := hook.n.Load(), int64(1+2*((read+499)/500+1+(read+499)/500+2)); got > most {
			t.Errorf("WithLimitScan(%d): a scrape sent %d commands, want at most %d", b.scan, got, most)
		}
		wantLines(t, body, fmt.Sprintf(`redisq_rate_limit_unread_keys{queue="tenants"} %d`, b.unread),
			fmt.Sprintf(`redisq_concurrency_limit_unread_keys{queue="tenants"} %d`, b.unread))
	}
	if probs, err := testutil.CollectAndLint(col); err != nil || len(probs) > 0 {
		t.Errorf("lint: %v %v", probs, err)
	}
}

// BenchmarkScrapeLimits measures a scrape of a queue with 5,000 rate and
// 5,000 concurrency limit keys (issue 41's case: scrape 20 took 124 ms,
// with 24 SLOWLOG entries over 1 ms in 5 scrapes) and reports the Redis
// time of a scrape, the commands that took 1 ms or more, per scrape, and
// the longest.
func BenchmarkScrapeLimits(b *testing.B) {
	s := redistest.New(b)
	c := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer c.Close()
	ctx := context.Background()
	q := limitedQueue(b, c, 5000, map[int]int{4999: 3, 2500: 2, 7: 1})
	col := dqprom.NewRedisCollector(q)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(col)
	if _, err := reg.Gather(); err != nil { // loads the scripts
		b.Fatal(err)
	}
	for _, a := range [][]interface{}{{"CONFIG", "SET", "slowlog-log-slower-than", "1000"}, {"CONFIG", "SET", "slowlog-max-len", "10000"}, {"SLOWLOG", "RESET"},
		{"CONFIG", "RESETSTAT"}} {
		if err := c.Do(ctx, a...).Err(); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		if _, err := reg.Gather(); err != nil {
			b.Fatal(err)
		}
	}
	logs, err := c.SlowLogGet(ctx, -1).Result()
	if err != nil {
		b.Fatal(err)
	}
	var longest time.Duration
	for _, l := range logs {
		longest = max(longest, l.Duration)
	}
	b.ReportMetric(float64(len(logs))/float64(b.N), "slow/scrape")
	b.ReportMetric(float64(longest.Microseconds()), "longest-µs")
	// The server time of the scrape's commands (a script's includes its
	// calls').
	info, err := c.Info(ctx, "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	var usec float64
	for _, m := range regexp.MustCompile(`cmdstat_(evalsha|eval|hscan|hgetall|zcard|sscan|exists|time):calls=\d+,usec=(\d+)`).FindAllStringSubmatch(info, -1) {
		if m[1] != "zcard" && m[1] != "time" { // those are called by the scripts
			v, _ := strconv.ParseFloat(m[2], 64)
			usec += v
		}
	}
	b.ReportMetric(usec/float64(b.N), "redis-µs/scrape")
}
