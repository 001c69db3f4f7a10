package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dq-go/delayqueue/bench/internal/redisprobe"
	"github.com/dq-go/delayqueue/bench/internal/report"
	"github.com/dq-go/delayqueue/redisq"
	"github.com/hibiken/asynq"
	"golang.org/x/time/rate"
)

// -mode limits: what flow control costs the server (the flow-control
// issue: "a limited queue at its limit, and 1,000 keys with concurrency 1
// each, cost within 1.5x an unlimited queue's server CPU per item"). Every
// row offers the same load, -rate items/s for -duration, each due at once
// (Add with After 0), and handles it with -consumers handlers that each
// hold an item -hold; a row ends when every item has been handled and
// acked. Rows, each implementation of -impl in turn (worker: a
// redisq.Worker; redis: the consumer loops of -impl redis, -batch; asynq):
//
//   - unlimited: items without a LimitKey, a queue without limits (the
//     baseline);
//   - rate: every item LimitKey("tenant"), the queue SetRateLimit(
//     "tenant", {N: -limit-rate, Per: 1s}) below -rate, so that from the
//     first second on the limiter is at its limit until the backlog is
//     gone (the row lasts about items / -limit-rate). The most claims in
//     any second (Message.ClaimedAt, Redis TIME) must be at most N;
//   - conc: items round-robin over -limit-keys keys acct0, acct1, ...,
//     each SetConcurrencyLimit(key, 1); every key whose item is held is at
//     its limit, but with round-robin order a key's next item comes
//     -limit-keys items later, so no item waits for a place;
//   - conc-runs (-limit-run R > 0): the same keys, in runs of R
//     consecutive items per key, so that a key's next items come due
//     while its item is held and wait for the place (the waiting path:
//     parked, then made due by the ack that frees the place).
//
// asynq beside them: unlimited, and the rate-limit pattern of its wiki
// (a handler over a golang.org/x/time/rate limiter returns an error that
// IsFailure says is no failure, retried after RetryIn, 0-9 s): that
// limiter is per process, not global. asynq has no per-key concurrency
// limit, so the conc rows have no asynq row.
//
// The table that ends the report gives each row's server CPU per item
// (INFO cpu) over the unlimited redisq row's, and over that of the
// unlimited row of the same consumers (target <= 1.5x).

// limitsPer is the rate limit's Per.
const limitsPer = time.Second

// limitCase is one row of -mode limits.
type limitCase struct {
	name  string             // unlimited, rate, conc, conc-runs
	desc  string             // the limit, for the table
	key   func(i int) string // item i's LimitKey ("": none)
	rateN int                // rate: N per limitsPer
	keys  int                // conc: how many keys
	setup func(ctx context.Context, q *redisq.Queue) error
}

// checkLimits checks the flags of -mode limits.
func (o *options) checkLimits() error {
	for _, s := range strings.Split(o.impl, ",") {
		if s != "worker" && s != "redis" && s != "asynq" {
			return fmt.Errorf("-mode limits: -impl %s: use worker, redis and asynq", s)
		}
	}
	if o.limitRate < 0 || float64(o.limitRateN()) >= o.rate {
		return fmt.Errorf("-mode limits: -limit-rate must be below -rate (%v), so that the load keeps the limiter at its limit", o.rate)
	}
	if o.limitKeys < 1 || o.limitRun < 0 || o.hold < 0 {
		return fmt.Errorf("-mode limits: -limit-keys must be >= 1, -limit-run and -hold >= 0")
	}
	if int(o.rate*o.duration.Seconds()) < 1 {
		return fmt.Errorf("-mode limits: -rate × -duration must be at least one item")
	}
	if !o.set["rounds"] {
		o.rounds = 1
	}
	if o.rounds < 1 {
		return fmt.Errorf("-mode limits: -rounds must be >= 1")
	}
	return nil
}

// limitRateN is -limit-rate, or half of -rate.
func (o *options) limitRateN() int {
	if o.limitRate > 0 {
		return o.limitRate
	}
	return max(1, int(o.rate/2))
}

func (o *options) limitCases() []limitCase {
	x := o.limitRateN()
	cs := []limitCase{
		{name: "unlimited", desc: "none"},
		{name: "rate", desc: fmt.Sprintf("%d/s on 1 key", x), rateN: x,
			key: func(int) string { return "tenant" },
			setup: func(ctx context.Context, q *redisq.Queue) error {
				return q.SetRateLimit(ctx, "tenant", redisq.RateLimit{N: x, Per: limitsPer})
			}},
	}
	k := o.limitKeys
	setConc := func(ctx context.Context, q *redisq.Queue) error {
		for j := range k {
			if err := q.SetConcurrencyLimit(ctx, "acct"+strconv.Itoa(j), 1); err != nil {
				return err
			}
		}
		return nil
	}
	cs = append(cs, limitCase{name: "conc", desc: fmt.Sprintf("conc 1 × %s keys, round-robin", report.Group(int64(k))), keys: k,
		key: func(i int) string { return "acct" + strconv.Itoa(i%k) }, setup: setConc})
	if run := o.limitRun; run > 0 {
		cs = append(cs, limitCase{name: "conc-runs", desc: fmt.Sprintf("conc 1 × %s keys, runs of %d", report.Group(int64(k)), run), keys: k,
			key: func(i int) string { return "acct" + strconv.Itoa(i/run%k) }, setup: setConc})
	}
	return cs
}

// limitsPhases returns the phases of -mode limits: -rounds rounds, each
// case by case, each implementation of -impl in turn. Rows measured in
// turns share the machine's moods (this VM's ratios drift by ±20% between
// rows measured minutes apart), so each round's ratios are its own.
func (r *redisRun) limitsPhases() []func() ([]report.Result, error) {
	var ps []func() ([]report.Result, error)
	for round := range r.o.rounds {
		for _, c := range r.o.limitCases() {
			for _, impl := range r.o.redisImpls() {
				var f func() (report.Result, error)
				switch {
				case impl == "asynq" && (c.name == "unlimited" || c.name == "rate"):
					f = func() (report.Result, error) { return r.limitsAsynq(c, round) }
				case impl == "worker" || impl == "redis":
					f = func() (report.Result, error) { return r.limitsRedisq(impl, c, round) }
				default:
					continue
				}
				ps = append(ps, func() ([]report.Result, error) {
					res, err := f()
					if r.o.rounds > 1 {
						res.Round = round + 1
					}
					return []report.Result{res}, err
				})
			}
		}
	}
	return ps
}

func (o *options) limitsTitle() string {
	n := int(o.rate * o.duration.Seconds())
	how := []string{}
	for _, impl := range o.redisImpls() {
		switch impl {
		case "worker":
			how = append(how, fmt.Sprintf("redisq.Worker (Concurrency %d)", o.consumers))
		case "redis":
			take, _ := report.TitleParts(o.batch, 0)
			if o.batch == 0 {
				take = "AckTake"
			}
			how = append(how, fmt.Sprintf("%d %s loops", o.consumers, take))
		case "asynq":
			how = append(how, fmt.Sprintf("asynq.Server (Concurrency %d)", o.consumers))
		}
	}
	rows := "unlimited, rate limit " + strconv.Itoa(o.limitRateN()) + "/s on one key, " + report.Group(int64(o.limitKeys)) + " keys with concurrency 1 (round-robin"
	if o.limitRun > 0 {
		rows += fmt.Sprintf("; and in runs of %d", o.limitRun)
	}
	return fmt.Sprintf("limits: %s: %s items each, offered at %s/s due at once, each held %v by its handler; rows: %s)",
		strings.Join(how, " vs "), report.Group(int64(n)), report.Rate(o.rate), o.hold, rows)
}

// maxInWindow returns the most of the sorted instants ts (ns) in any
// half-open window of length per.
func maxInWindow(ts []int64, per time.Duration) int {
	most, i := 0, 0
	for j := range ts {
		for ts[j]-ts[i] >= int64(per) {
			i++
		}
		most = max(most, j-i+1)
	}
	return most
}

// startRate returns the starts per second of the sorted instants ts (ns)
// after the first window of length per (a sliding window lets its first N
// go at once), or over all of them when they span less than 2 per.
func startRate(ts []int64, per time.Duration) float64 {
	if len(ts) < 2 {
		return 0
	}
	first, last := ts[0], ts[len(ts)-1]
	if last-first < 2*int64(per) {
		return float64(len(ts)-1) / (float64(last-first) / 1e9)
	}
	from := first + int64(per)
	k, _ := slices.BinarySearch(ts, from)
	return float64(len(ts)-k) / (float64(last-from) / 1e9)
}

// keyIndex returns N of a key "acctN" (-1 for any other).
func keyIndex(key string) int {
	s, ok := strings.CutPrefix(key, "acct")
	if !ok {
		return -1
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return -1
	}
	return n
}

// limitTimeout is how long a row may take to handle its n items.
func (o *options) limitTimeout(c limitCase, n int, slack float64) time.Duration {
	d := o.duration + 30*time.Second
	if c.rateN > 0 {
		d += time.Duration(slack * float64(n) / float64(c.rateN) * float64(time.Second))
	}
	return d
}

// limitsRedisq runs case c with impl's consumers (worker: a Worker; redis:
// the consumer loops of -batch) in round (from 0), on a queue of its own.
func (r *redisRun) limitsRedisq(impl string, c limitCase, round int) (report.Result, error) {
	o := r.o
	n := int(o.rate * o.duration.Seconds())
	res := report.Result{Name: impl + "/" + c.name, Kind: "queue", Mode: "limits", Items: n, HeapPerItem: -1, Limit: c.desc, LimitN: c.rateN}
	fail := func(err error) (report.Result, error) {
		res.Note = report.JoinNote(res.Note, err.Error())
		return res, err
	}
	off0, rtt0, err := redisprobe.Calibrate(r.ctx, r.c, 200)
	if err != nil {
		return fail(err)
	}
	q, err := r.newQueue(fmt.Sprintf("limits-%s-%s-%d", impl, c.name, round))
	if err != nil {
		return fail(err)
	}
	defer q.Close()
	if c.setup != nil {
		if err := c.setup(r.ctx, q); err != nil {
			return fail(fmt.Errorf("setting the limits: %w", err))
		}
	}

	stored := make([]int64, n)  // the due time Add stored (Redis clock, ns)
	due := make([]int64, n)     // Message.Due: the slot or the time made due
	claimed := make([]int64, n) // Message.ClaimedAt (Redis clock, ns)
	lat := make([]int64, n)     // receive (Redis clock) - Message.Due, ns
	seen := make([]atomic.Bool, n)
	inFlight := make([]atomic.Int32, max(c.keys, 1))
	var maxPerKey atomic.Int32
	var offered, delivered, dups atomic.Int64
	var errs atomic.Value
	allDone := make(chan struct{})
	ctx, cancel := context.WithCancel(r.ctx)
	defer cancel()

	// handle records m's start, then holds it -hold (the key's place
	// with it, for the conc rows).
	handle := func(recv time.Time, m *redisq.Message) {
		i, err := strconv.Atoi(m.ID)
		if err != nil || i < 0 || i >= n || !seen[i].CompareAndSwap(false, true) {
			dups.Add(1)
			return
		}
		due[i] = m.Due.UnixNano()
		claimed[i] = m.ClaimedAt.UnixNano()
		lat[i] = int64(recv.Add(off0).Sub(m.Due))
		k := -1
		if c.keys > 0 {
			k = keyIndex(m.LimitKey)
		}
		if k >= 0 && k < len(inFlight) {
			v := inFlight[k].Add(1)
			for old := maxPerKey.Load(); v > old && !maxPerKey.CompareAndSwap(old, v); old = maxPerKey.Load() {
			}
			defer inFlight[k].Add(-1)
		}
		if o.hold > 0 {
			time.Sleep(o.hold)
		}
		if delivered.Add(1) == int64(n) {
			close(allDone)
		}
	}

	s0 := snapServer(r.ctx, r.c)
	start := time.Now()
	stopProgress := o.Progress(res.Name, n, &offered, &delivered, start)
	cpu0 := report.CPUTime()
	var stop func()
	if impl == "worker" {
		stop = startWorkerWith(ctx, q, o.consumers, func(_ context.Context, m *redisq.Message) error {
			handle(time.Now(), m)
			return nil
		}, &errs)
	} else {
		var wg sync.WaitGroup
		for range o.consumers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				consumer(ctx, q, o.batch, func(recv time.Time, ms []*redisq.Message) {
					for _, m := range ms {
						handle(recv, m)
					}
				}, &errs)
			}()
		}
		stop = func() { cancel(); wg.Wait() }
	}
	produceAtRate(o, n, start, func(_, i int) error {
		it := redisq.EnqueueItem{ID: strconv.Itoa(i), Payload: payload(o, i)}
		if c.key != nil {
			it.Job.LimitKey = c.key(i)
		}
		d, err := q.Add(r.ctx, it)
		stored[i] = d.UnixNano()
		return err
	}, &offered, &errs)
	res.OfferSeconds = time.Since(start).Seconds()
	res.OfferRate = float64(offered.Load()) / res.OfferSeconds
	select {
	case <-allDone:
	case <-time.After(o.limitTimeout(c, n, 1.5)):
		res.Note = report.JoinNote(res.Note, "timed out waiting for the items")
	case <-r.ctx.Done():
	}
	stop() // the handlers' acks go out
	el := time.Since(start)
	cpu1 := report.CPUTime()
	stopProgress()
	s1 := snapServer(r.ctx, r.c)
	off1, rtt1, err := redisprobe.Calibrate(r.ctx, r.c, 200)
	if err != nil {
		off1, rtt1 = off0, rtt0
	}

	res.Delivered = int(delivered.Load())
	res.Duplicates = int(dups.Load())
	res.CPUSeconds = (cpu1 - cpu0).Seconds()
	if res.Delivered > 0 {
		res.CPUPerItemNs = float64(cpu1-cpu0) / float64(res.Delivered)
		res.DeliverRate = float64(res.Delivered) / el.Seconds()
	}
	var ts, ls, byRedis []int64
	for i := range seen {
		if !seen[i].Load() {
			continue
		}
		ts = append(ts, claimed[i])
		ls = append(ls, lat[i])
		byRedis = append(byRedis, claimed[i]-due[i])
		if due[i] > stored[i] {
			res.Waited++
		}
		if claimed[i] < due[i] {
			res.Early++
		}
	}
	slices.Sort(ts)
	res.StartRate = startRate(ts, limitsPer)
	res.MaxPerWindow = maxInWindow(ts, limitsPer)
	res.MaxPerKey = int(maxPerKey.Load())
	res.SetLateness(ls)
	res.Attempts = 1
	setServer(&res, res.Delivered, s0, s1)
	if s := callsPerItem(s0, s1, res.Delivered); s != "" {
		res.Note = report.JoinNote(res.Note, "server commands per item by name: "+s)
	}

	how := fmt.Sprintf("a Worker with Concurrency %d", o.consumers)
	if impl == "redis" {
		take, _ := report.TitleParts(o.batch, 0)
		if o.batch == 0 {
			take = "AckTake"
		} else if o.batch > 1 {
			take += "+AckMany"
		} else {
			take += "+Ack"
		}
		how = fmt.Sprintf("%d %s loops", o.consumers, take)
	}
	res.Note = report.JoinNote(fmt.Sprintf("limit: %s; %s items offered at %s/s (Add, due at once), handled by %s, each held %v; %v from the first offer to the last ack",
		c.desc, report.Group(int64(n)), report.Rate(o.rate), how, o.hold, el.Round(time.Millisecond)), res.Note)
	if c.rateN > 0 {
		verdict := "PASS"
		if res.MaxPerWindow > c.rateN {
			verdict = "FAIL"
		}
		res.Note = report.JoinNote(res.Note, fmt.Sprintf("rate limit %d per %v: most claims in any %v (Message.ClaimedAt, Redis TIME, ms) %d, never above %d: %s; %s starts/s after the first window",
			c.rateN, limitsPer, limitsPer, res.MaxPerWindow, c.rateN, verdict, report.Rate(res.StartRate)))
	}
	if c.keys > 0 {
		verdict := "PASS"
		if res.MaxPerKey > 1 {
			verdict = "FAIL"
		}
		res.Note = report.JoinNote(res.Note, fmt.Sprintf("concurrency 1 per key: at most %d of a key's items held at once in the handlers: %s", res.MaxPerKey, verdict))
	}
	res.Note = report.JoinNote(res.Note, fmt.Sprintf("%d of %d items waited (for a rate slot or a place: Message.Due later than the due time Add stored)", res.Waited, res.Delivered))
	unc := max(rtt0, rtt1)/2 + absDur(off1-off0)
	res.Note = report.JoinNote(res.Note, fmt.Sprintf("lateness = receive instant on the Redis clock - Message.Due (its rate slot for an item that waited for one, the time a freed place made it due for one that waited for a place), uncertain by about ±%v",
		unc.Round(time.Microsecond)))
	if len(byRedis) > 0 {
		slices.Sort(byRedis)
		p := func(f float64) string { return report.Dur(byRedis[int(f*float64(len(byRedis)-1))]) }
		res.Note = report.JoinNote(res.Note, fmt.Sprintf("by Redis TIME alone (ClaimedAt - Due, 1ms resolution): p50 %s, p99 %s, max %s", p(0.5), p(0.99), p(1)))
	}
	if res.Early > 0 {
		res.Note = report.JoinNote(res.Note, fmt.Sprintf("%d claimed before their Due", res.Early))
	}
	if res.Delivered < n {
		res.Note = report.JoinNote(res.Note, fmt.Sprintf("%d items NOT delivered", n-res.Delivered))
	}
	if err, _ := errs.Load().(error); err != nil {
		return fail(err)
	}
	if res.Delivered < n {
		return res, fmt.Errorf("%s: %d of %d items handled", res.Name, res.Delivered, n)
	}
	return res, nil
}

// asynqRateLimitError is the asynq wiki's RateLimitError: a handler over
// the limit returns it, IsFailure says it is no failure (the task's retry
// count is not used up) and RetryDelayFunc retries it after RetryIn.
type asynqRateLimitError struct{ RetryIn time.Duration }

func (e *asynqRateLimitError) Error() string {
	return fmt.Sprintf("rate limited (retry in %v)", e.RetryIn)
}

func isAsynqRateLimitError(err error) bool {
	var e *asynqRateLimitError
	return errors.As(err, &e)
}

// limitsAsynq runs case c (unlimited or rate) on asynq: a server with
// -consumers workers and the same handler; rate with the wiki's pattern, a
// rate.Limiter of -limit-rate per second, burst as much, in this process.
func (r *redisRun) limitsAsynq(c limitCase, round int) (report.Result, error) {
	o := r.o
	n := int(o.rate * o.duration.Seconds())
	res := report.Result{Name: "asynq/" + c.name, Kind: "queue", Mode: "limits", Items: n, HeapPerItem: -1, Limit: c.desc, LimitN: c.rateN}
	fail := func(err error) (report.Result, error) {
		res.Note = report.JoinNote(res.Note, err.Error())
		return res, err
	}
	queue := r.asynqQueue(fmt.Sprintf("limits-%s-%d", c.name, round))
	rc, cl := r.asynqClients()
	defer rc.Close()

	sentAt := make([]atomic.Int64, n)  // local instant before Client.Enqueue, ns since start
	startAt := make([]atomic.Int64, n) // handler start (allowed), ns since start
	tries := make([]atomic.Int32, n)
	seen := make([]atomic.Bool, n)
	var offered, delivered, dups, calls, rejected atomic.Int64
	var errs atomic.Value
	allDone := make(chan struct{})
	var start time.Time
	var started atomic.Bool
	var lim *rate.Limiter
	if c.rateN > 0 {
		// The wiki's burst is 3 s of the rate; with burst 1 the pattern
		// starts about one task per forwarder run (the tasks a run moves
		// back are all tried within milliseconds), so a second's worth.
		lim = rate.NewLimiter(rate.Limit(float64(c.rateN)/limitsPer.Seconds()), c.rateN)
	}
	srv, err := r.asynqServerWith(rc, queue, func(_ context.Context, t *asynq.Task) error {
		calls.Add(1)
		i := taskIndex(t)
		if !started.Load() || i < 0 || i >= n {
			dups.Add(1)
			return nil
		}
		tries[i].Add(1)
		if lim != nil && !lim.Allow() {
			rejected.Add(1)
			return &asynqRateLimitError{RetryIn: time.Duration(rand.IntN(10)) * time.Second}
		}
		if !seen[i].CompareAndSwap(false, true) {
			dups.Add(1)
			return nil
		}
		startAt[i].Store(int64(time.Since(start)))
		if o.hold > 0 {
			time.Sleep(o.hold)
		}
		if delivered.Add(1) == int64(n) {
			close(allDone)
		}
		return nil
	}, func(cfg *asynq.Config) {
		if lim != nil {
			cfg.IsFailure = func(err error) bool { return !isAsynqRateLimitError(err) }
			cfg.RetryDelayFunc = func(k int, err error, t *asynq.Task) time.Duration {
				var e *asynqRateLimitError
				if errors.As(err, &e) {
					return e.RetryIn
				}
				return asynq.DefaultRetryDelayFunc(k, err, t)
			}
		}
	})
	if err != nil {
		return fail(err)
	}
	time.Sleep(2 * time.Second) // let the server's start-up traffic pass
	s0 := snapServer(r.ctx, r.c)
	start = time.Now()
	started.Store(true)
	stopProgress := o.Progress(res.Name, n, &offered, &delivered, start)
	cpu0 := report.CPUTime()
	produceAtRate(o, n, start, func(_, i int) error {
		sentAt[i].Store(int64(time.Since(start)))
		_, err := cl.EnqueueContext(r.ctx, asynqTask(o, i), asynq.Queue(queue), asynq.TaskID(strconv.Itoa(i)))
		return err
	}, &offered, &errs)
	res.OfferSeconds = time.Since(start).Seconds()
	res.OfferRate = float64(offered.Load()) / res.OfferSeconds
	select {
	case <-allDone:
	case <-time.After(o.limitTimeout(c, n, 10) + 30*time.Second):
		res.Note = report.JoinNote(res.Note, "timed out waiting for the tasks")
	case <-r.ctx.Done():
	}
	r.asynqDrained(queue)
	el := time.Since(start)
	cpu1 := report.CPUTime()
	s1 := snapServer(r.ctx, r.c)
	stopProgress()
	srv.Shutdown()

	res.Delivered = int(delivered.Load())
	res.Duplicates = int(dups.Load())
	res.CPUSeconds = (cpu1 - cpu0).Seconds()
	if res.Delivered > 0 {
		res.CPUPerItemNs = float64(cpu1-cpu0) / float64(res.Delivered)
		res.DeliverRate = float64(res.Delivered) / el.Seconds()
		res.Attempts = float64(calls.Load()) / float64(res.Delivered)
	}
	var ts, ls []int64
	for i := range seen {
		if !seen[i].Load() {
			continue
		}
		s := startAt[i].Load()
		ts = append(ts, s)
		ls = append(ls, s-sentAt[i].Load())
		if tries[i].Load() > 1 {
			res.Waited++
		}
	}
	slices.Sort(ts)
	res.StartRate = startRate(ts, limitsPer)
	res.MaxPerWindow = maxInWindow(ts, limitsPer)
	res.SetLateness(ls)
	setServer(&res, res.Delivered, s0, s1)
	if s := callsPerItem(s0, s1, res.Delivered); s != "" {
		res.Note = report.JoinNote(res.Note, "server commands per item by name: "+s)
	}

	check := "5s (asynq's default)"
	if o.asynqCheck > 0 {
		check = o.asynqCheck.String()
	}
	res.Note = report.JoinNote(fmt.Sprintf("limit: %s; %s tasks offered at %s/s (Client.Enqueue, due at once), handled by a server with Concurrency %d, each held %v; %v from the first offer to the last done",
		c.desc, report.Group(int64(n)), report.Rate(o.rate), o.consumers, o.hold, el.Round(time.Millisecond)), res.Note)
	if lim != nil {
		verdict := "PASS"
		if res.MaxPerWindow > c.rateN {
			verdict = fmt.Sprintf("above %d", c.rateN)
		}
		res.Note = report.JoinNote(res.Note, fmt.Sprintf("the asynq wiki's rate limiting: golang.org/x/time/rate.NewLimiter(%d/s, burst %[1]d) in this process (a token bucket, so up to twice that in a second; per process, not global: P servers start up to P times as many), a handler over it returns a RateLimitError (IsFailure false, RetryDelayFunc: RetryIn 0-9 s), moved back by the forwarder every DelayedTaskCheckInterval %s",
			c.rateN, check))
		res.Note = report.JoinNote(res.Note, fmt.Sprintf("most starts in any %v (this process's clock) %d: %s; %s starts/s after the first window; %.2f handler calls per task (%d rejected), %d tasks retried at least once",
			limitsPer, res.MaxPerWindow, verdict, report.Rate(res.StartRate), res.Attempts, rejected.Load(), res.Waited))
	}
	res.Note = report.JoinNote(res.Note, "lateness = handler start - instant before Client.Enqueue, this process's clock")
	if res.Delivered < n {
		res.Note = report.JoinNote(res.Note, fmt.Sprintf("%d items NOT delivered", n-res.Delivered))
	}
	if err, _ := errs.Load().(error); err != nil {
		return fail(err)
	}
	if res.Delivered < n {
		return res, fmt.Errorf("%s: %d of %d tasks handled", res.Name, res.Delivered, n)
	}
	return res, nil
}

// writeLimits prints the rows of -mode limits side by side: each row's
// server CPU per item over the unlimited redisq row's (the Worker's, else
// the Take loops') and over its own consumers' unlimited row (the target
// for the limited redisq rows: <= 1.5x). With -rounds, a ratio is taken
// within each round and the row reports the median round's figures.
func writeLimits(w io.Writer, o *options, rs []report.Result) {
	var names []string
	runs := map[string][]*report.Result{} // name -> its rounds in order
	for i := range rs {
		if r := &rs[i]; r.Mode == "limits" {
			if runs[r.Name] == nil {
				names = append(names, r.Name)
			}
			runs[r.Name] = append(runs[r.Name], r)
		}
	}
	if len(names) == 0 {
		return
	}
	baseName := "worker/unlimited"
	if runs[baseName] == nil {
		baseName = "redis/unlimited"
	}
	// ratios returns name's server CPU per item over ref's, round by
	// round (rounds where either is unknown left out).
	ratios := func(name, ref string) []float64 {
		var xs []float64
		for i, a := range runs[name] {
			if i < len(runs[ref]) {
				if b := runs[ref][i]; b.ServerCPUPerItemNs > 0 && a.ServerCPUPerItemNs > 0 {
					xs = append(xs, a.ServerCPUPerItemNs/b.ServerCPUPerItemNs)
				}
			}
		}
		return xs
	}
	// pick returns the median of xs and its index in xs (-1: none).
	pick := func(xs []float64) (float64, int) {
		if len(xs) == 0 {
			return 0, -1
		}
		idx := make([]int, len(xs))
		for i := range idx {
			idx[i] = i
		}
		slices.SortFunc(idx, func(a, b int) int { return cmp.Compare(xs[a], xs[b]) })
		m := idx[(len(xs)-1)/2]
		if len(xs)%2 == 0 { // the mean of the middle two, shown by the lower's round
			return (xs[idx[len(xs)/2-1]] + xs[idx[len(xs)/2]]) / 2, m
		}
		return xs[m], m
	}
	fmtX := func(x float64, ok bool) string {
		if !ok {
			return "-"
		}
		return strconv.FormatFloat(x, 'f', 2, 64) + "x"
	}
	const goal = 1.5
	head := []string{"limits", "limit", "handled", "starts/s", "most in 1s", "waited", "cmds/item", "server CPU/item",
		"/ redisq unlimited", "/ own unlimited", "target", "met", "lateness p50 / p99 / max"}
	if o.rounds > 1 {
		head = append(head, "/ own unlimited, each round")
	}
	t := report.Table{MD: o.MD, Head: head}
	var verdicts []string
	for _, name := range names {
		impl, c, _ := strings.Cut(name, "/")
		own := impl + "/unlimited"
		xs := ratios(name, own)
		x, at := pick(xs)
		r := runs[name][0]
		if at >= 0 {
			r = runs[name][at]
		} else if len(runs[name]) > 0 {
			r = runs[name][(len(runs[name])-1)/2]
		}
		bx, bat := pick(ratios(name, baseName))
		target, met := "", ""
		if impl != "asynq" && c != "unlimited" && at >= 0 {
			target, met = "<= 1.5x", yesNoMet(x <= goal)
			v := fmt.Sprintf("%s %.2fx (%s)", name, x, met)
			if len(xs) > 1 {
				v = fmt.Sprintf("%s median %.2fx of %d rounds (%s)", name, x, len(xs), met)
			}
			verdicts = append(verdicts, v)
		}
		most := "-"
		if r.LimitN > 0 {
			most = fmt.Sprintf("%d (<= %d)", r.MaxPerWindow, r.LimitN)
			if worst := maxPerWindowOf(runs[name]); worst > r.LimitN {
				most = fmt.Sprintf("%d (> %d!)", worst, r.LimitN)
			}
		} else if r.MaxPerWindow > 0 {
			most = strconv.Itoa(r.MaxPerWindow)
		}
		late := "-"
		if p := r.Lateness; p != nil {
			late = report.Dur(p.P50) + " / " + report.Dur(p.P99) + " / " + report.Dur(p.Max)
		}
		row := []string{name, r.Limit, deliveredOf(r), report.Rate(r.StartRate), most, strconv.Itoa(r.Waited),
			strconv.FormatFloat(r.ServerCmdsPerItem, 'f', 1, 64), report.Dur(int64(r.ServerCPUPerItemNs)),
			fmtX(bx, bat >= 0), fmtX(x, at >= 0), target, met, late}
		if o.rounds > 1 {
			each := make([]string, len(xs))
			for i, v := range xs {
				each[i] = strconv.FormatFloat(v, 'f', 2, 64)
			}
			row = append(row, strings.Join(each, " "))
		}
		t.Add(row)
	}
	t.Write(w)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "limits: server CPU and commands per handled item are the whole redis-server's (INFO cpu, INFO commandstats with scripts' own calls) from the first offer to the last ack, the enqueues included;")
	fmt.Fprintln(w, "  most in 1s: the most starts in any second (redisq: Message.ClaimedAt by Redis TIME; asynq: handler starts by this process's clock); waited: items that waited for a rate slot or a place (asynq: tasks retried at least once);")
	fmt.Fprintln(w, "  lateness: redisq from Message.Due (an item that waited: its rate slot, or when a freed place made it due), asynq from its Client.Enqueue.")
	if o.rounds > 1 {
		fmt.Fprintf(w, "  %d rounds, every row in turn in each: a ratio is taken within its round; a row shows the figures of its median round (of an even count, the lower middle; the ratio is the mean of the middle two).\n", o.rounds)
	}
	if runs["asynq/unlimited"] != nil || runs["asynq/rate"] != nil {
		fmt.Fprintln(w, "  asynq has no rate limiter of its own: asynq/rate is its wiki's pattern (x/time/rate in the handler, a RateLimitError retried later), a limit per server process, not global;")
		fmt.Fprintln(w, "  asynq has no per-key concurrency limit (Concurrency is per server, over all tasks): the conc rows have no asynq equivalent.")
	}
	if len(verdicts) > 0 {
		fmt.Fprintf(w, "target (flow-control issue): limited rows within %.1fx the server CPU per item of the unlimited row of the same consumers: %s\n", goal, strings.Join(verdicts, ", "))
	}
	fmt.Fprintln(w)
}

// maxPerWindowOf is the most starts in any window of any of rs.
func maxPerWindowOf(rs []*report.Result) int {
	most := 0
	for _, r := range rs {
		most = max(most, r.MaxPerWindow)
	}
	return most
}

// callsPerItem lists the commands the server ran from s0 to s1 (INFO
// excluded) per item, most first ("" when unknown).
func callsPerItem(s0, s1 serverSnap, items int) string {
	if s0.calls == nil || s1.calls == nil || items <= 0 {
		return ""
	}
	type nc struct {
		name string
		n    int64
	}
	var cs []nc
	for k, v := range s1.calls {
		if d := v - s0.calls[k]; d > 0 && k != "info" {
			cs = append(cs, nc{k, d})
		}
	}
	slices.SortFunc(cs, func(a, b nc) int {
		if a.n != b.n {
			return int(b.n - a.n)
		}
		return strings.Compare(a.name, b.name)
	})
	var parts []string
	for _, c := range cs {
		if f := float64(c.n) / float64(items); f >= 0.05 {
			parts = append(parts, fmt.Sprintf("%s %.2f", c.name, f))
		}
	}
	return strings.Join(parts, ", ")
}

func deliveredOf(r *report.Result) string {
	s := report.Group(int64(r.Delivered))
	if r.Delivered != r.Items {
		s += "/" + report.Group(int64(r.Items)) + " (!)"
	}
	return s
}
