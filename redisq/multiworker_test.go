package redisq

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/dq-go/delayqueue/redisq/redistest"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// fill enqueues n items due now into q, ids prefix0..prefix(n-1).
func fill(t *testing.T, q *Queue, prefix string, n int) {
	t.Helper()
	items := make([]EnqueueItem, n)
	for i := range items {
		items[i] = EnqueueItem{ID: prefix + strconv.Itoa(i)}
	}
	_, err := q.EnqueueMany(context.Background(), items)
	require.NoError(t, err)
}

// shareCounter counts the first limit messages a handler starts, by
// queue, and closes done when it has seen them.
type shareCounter struct {
	mu    sync.Mutex
	limit int
	seen  int
	by    map[string]int
	done  chan struct{}
}

func newShareCounter(limit int) *shareCounter {
	return &shareCounter{limit: limit, by: map[string]int{}, done: make(chan struct{})}
}

func (c *shareCounter) handle(ctx context.Context, m *Message) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen < c.limit {
		c.seen++
		c.by[m.QueueName()]++
		if c.seen == c.limit {
			close(c.done)
		}
	}
	return nil
}

func (c *shareCounter) counts() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for k, v := range c.by {
		out[k] = v
	}
	return out
}

// Weighted: while every queue has due work, each gets its weight's share
// of the claims (within 10% of it over 10,000), and a queue without work
// leaves its share to the others in proportion to their weights.
func TestMultiWorkerWeightedShares(t *testing.T) {
	noLeaks(t)
	s := startRedis(t, "--appendfsync", "everysec")
	c := s.client(t)
	crit, def, low := newQueue(t, c, "critical"), newQueue(t, c, "default"), newQueue(t, c, "low")
	const claims = 10_000
	// Enough that no queue runs dry within the counted claims.
	fill(t, crit, "c", claims)
	fill(t, def, "d", claims)
	fill(t, low, "l", claims)

	check := func(name string, got map[string]int, want map[string]float64, n int) {
		t.Helper()
		t.Logf("%s: %v of %d", name, got, n)
		for q, share := range want {
			exp := share * float64(n)
			require.InDelta(t, exp, float64(got[q]), exp*0.10, "%s: queue %q got %d of %d claims, want %.0f±10%%", name, q, got[q], n, exp)
		}
	}

	// run runs a worker over the three queues until it has handled n.
	run := func(n int) map[string]int {
		sc := newShareCounter(n)
		w := NewMultiWorker(sc.handle, WorkerOptions{Concurrency: 8, NoRecurring: true},
			WorkerQueue{Queue: crit, Weight: 6}, WorkerQueue{Queue: def, Weight: 3}, WorkerQueue{Queue: low, Weight: 1})
		runWorker(t, w)
		select {
		case <-sc.done:
		case <-time.After(2 * time.Minute):
			t.Fatalf("only %v handled", sc.counts())
		}
		shutdown(t, w)
		return sc.counts()
	}
	check("all busy", run(claims), map[string]float64{"critical": 0.6, "default": 0.3, "low": 0.1}, claims)

	// The critical queue idle: default and low share 3:1.
	_, err := crit.Purge(context.Background(), StateScheduled)
	require.NoError(t, err)
	const rest = 2000
	check("critical idle", run(rest), map[string]float64{"critical": 0, "default": 0.75, "low": 0.25}, rest)
	audit(t, crit)
	audit(t, def)
	audit(t, low)
}

// shutdown stops w within 10 s.
func shutdown(t *testing.T, w *Worker) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, w.Shutdown(ctx))
}

// Strict priority: no item of a lower queue is claimed while a queue
// above it has due work, neither from a backlog nor when the higher
// queue's work arrives while the lower one's runs.
func TestMultiWorkerStrictPriority(t *testing.T) {
	noLeaks(t)
	s := startRedis(t, "--appendfsync", "everysec")
	c := s.client(t)
	ctx := context.Background()
	high, mid, low := newQueue(t, c, "high"), newQueue(t, c, "mid"), newQueue(t, c, "low")
	const n = 300
	fill(t, low, "l", n)
	fill(t, mid, "m", n)
	fill(t, high, "h", n)

	var mu sync.Mutex
	var got []*Message
	slow := atomic.Bool{}
	h := func(ctx context.Context, m *Message) error {
		mu.Lock()
		got = append(got, m)
		mu.Unlock()
		if slow.Load() {
			time.Sleep(2 * time.Millisecond)
		}
		return nil
	}
	w := NewMultiWorker(h, WorkerOptions{Concurrency: 6, StrictPriority: true, NoRecurring: true},
		WorkerQueue{Queue: high}, WorkerQueue{Queue: mid}, WorkerQueue{Queue: low})
	runWorker(t, w)
	eventually(t, time.Minute, "the backlog handled", func() bool { mu.Lock(); defer mu.Unlock(); return len(got) == 3*n })

	// Every claim of a lower queue came after the last of the queues above.
	rank := func(m *Message) int { return strings.Index("hml", m.ID[:1]) }
	mu.Lock()
	last := [3]time.Time{}
	for _, m := range got {
		r := rank(m)
		last[r] = maxTime(last[r], m.ClaimedAt)
	}
	for _, m := range got {
		for above := range rank(m) {
			require.False(t, m.ClaimedAt.Before(last[above]), "%s claimed at %v, before the last %q claim at %v", m.ID, m.ClaimedAt, "hml"[above:above+1], last[above])
		}
	}
	got = nil
	mu.Unlock()

	// Work for the top queue arriving while the bottom one's runs: once
	// it is due (and the worker had a moment to hear of it), the bottom
	// queue gets no claim until the top queue is drained.
	slow.Store(true)
	fill(t, low, "L", 2000)
	eventually(t, time.Minute, "low items running", func() bool { mu.Lock(); defer mu.Unlock(); return len(got) > 50 })
	fill(t, high, "H", 200)
	eventually(t, time.Minute, "high items handled", func() bool {
		mu.Lock()
		defer mu.Unlock()
		k := 0
		for _, m := range got {
			if m.ID[0] == 'H' {
				k++
			}
		}
		return k == 200
	})
	mu.Lock()
	var firstH, lastH time.Time
	for _, m := range got {
		if m.ID[0] == 'H' {
			if firstH.IsZero() || m.ClaimedAt.Before(firstH) {
				firstH = m.ClaimedAt
			}
			lastH = maxTime(lastH, m.ClaimedAt)
		}
	}
	// Claims of the bottom queue that had started before the top queue's
	// waiter heard of its work may end after firstH; none starts later.
	const hear = time.Second
	between := 0
	for _, m := range got {
		if m.ID[0] == 'L' && m.ClaimedAt.After(firstH.Add(hear)) && m.ClaimedAt.Before(lastH) {
			between++
		}
	}
	mu.Unlock()
	require.Zero(t, between, "low claims while high had due work (high claimed %v..%v)", firstH, lastH)
	shutdown(t, w)
	_, err := low.Purge(ctx, StateScheduled)
	require.NoError(t, err)
	audit(t, high)
	audit(t, low)
}

// An idle Worker over k queues sends no more commands than k idle Workers
// over one queue each, measured side by side over 10 s: a blocking wait
// per queue and its claim per wake cap, and the heartbeats.
func TestMultiWorkerIdleCommands(t *testing.T) {
	noLeaks(t)
	s := startRedis(t)
	const k, wakeCap = 3, time.Second
	multiC, singleC := s.client(t), s.client(t)
	multiH, singleH := &countHook{}, &countHook{}
	multiC.AddHook(multiH)
	singleC.AddHook(singleH)
	var wqs []WorkerQueue
	var singles []*Worker
	for i := range k {
		wqs = append(wqs, WorkerQueue{Queue: newQueue(t, multiC, "multi"+strconv.Itoa(i), WithWakeCap(wakeCap))})
		singles = append(singles, NewWorker(newQueue(t, singleC, "single"+strconv.Itoa(i), WithWakeCap(wakeCap)), func(context.Context, *Message) error { return nil }, WorkerOptions{NoRecurring: true}))
	}
	multi := NewMultiWorker(func(context.Context, *Message) error { return nil }, WorkerOptions{NoRecurring: true}, wqs...)
	runWorker(t, multi)
	for _, w := range singles {
		runWorker(t, w)
	}
	eventually(t, 10*time.Second, "every queue waited on", func() bool { return multiH.bzpopmin.Load() >= k && singleH.bzpopmin.Load() >= k })
	time.Sleep(wakeCap) // past the start's claims
	m0, s0, mbz0 := multiH.total.Load(), singleH.total.Load(), multiH.bzpopmin.Load()
	const idle = 10 * time.Second
	time.Sleep(idle)
	m, sg, mbz := multiH.total.Load()-m0, singleH.total.Load()-s0, multiH.bzpopmin.Load()-mbz0
	t.Logf("idle %v over %d queues: multi-queue worker %d commands (%d BZPOPMIN), %d single-queue workers %d", idle, k, m, mbz, k, sg)
	// A wait's end and the next can fall on either side of the window.
	require.LessOrEqual(t, m, sg+2*k, "the multi-queue worker costs more than one idle worker per queue")
	require.LessOrEqual(t, mbz, int64(k)*(int64(idle/wakeCap)+2), "more than one wait per queue per wake cap")
	require.Positive(t, mbz, "the multi-queue worker should be blocking")
}

// inversion is how long the handled items' due order was broken: the
// most that an item was due before one handled ahead of it.
func inversion(ms []*Message) time.Duration {
	var front time.Time
	var worst time.Duration
	for _, m := range ms {
		worst = max(worst, front.Sub(m.Due))
		front = maxTime(front, m.Due)
	}
	return worst
}

// A Worker over a Partitioned queue handles every item once, never early,
// and merges the partitions in due order as concurrent Partitioned.Take
// callers do: measured side by side on the same load, where one partition
// holds most of the items and the handlers fall behind (a worker per
// partition, its handlers split, breaks due order by hundreds of ms here).
func TestMultiWorkerPartitioned(t *testing.T) {
	noLeaks(t)
	s := startRedis(t, "--appendfsync", "everysec")
	c := s.client(t)
	ctx := context.Background()
	const n, handlers, work = 600, 3, 2 * time.Millisecond
	load := func(name string) *Partitioned {
		p := newPartitioned(t, c, name, 3)
		items := make([]EnqueueItem, n)
		for i := range items {
			part := 0 // two thirds of the items
			if i%3 == 0 {
				part = 1 + i%2
			}
			items[i] = EnqueueItem{ID: partKeyFor(p, "i"+strconv.Itoa(i)+"-", part), After: time.Duration(i/2) * time.Millisecond}
		}
		_, err := p.EnqueueMany(ctx, items)
		require.NoError(t, err)
		return p
	}

	// Partitioned.Take, one caller per handler.
	p := load("bytake")
	var mu sync.Mutex
	var byTake []*Message
	var wg sync.WaitGroup
	takeCtx, stop := context.WithCancel(ctx)
	for range handlers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				m, err := p.Take(takeCtx)
				if err != nil {
					return
				}
				mu.Lock()
				byTake = append(byTake, m)
				if len(byTake) == n {
					stop()
				}
				mu.Unlock()
				time.Sleep(work)
				if err := m.Ack(ctx); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	stop()

	// The worker.
	p = load("byworker")
	var got []*Message
	counts := map[string]int{}
	h := func(ctx context.Context, m *Message) error {
		mu.Lock()
		got = append(got, m)
		counts[m.ID]++
		mu.Unlock()
		time.Sleep(work)
		return nil
	}
	w := NewMultiWorker(h, WorkerOptions{Concurrency: handlers, NoRecurring: true}, WorkerQueue{Partitioned: p})
	runWorker(t, w)
	eventually(t, time.Minute, "every item handled", func() bool { mu.Lock(); defer mu.Unlock(); return len(got) >= n })
	shutdown(t, w)
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, got, n, "handled more than once")
	for _, m := range got {
		require.Equal(t, 1, counts[m.ID], "%s", m.ID)
		require.False(t, m.ClaimedAt.Before(m.Due), "%s claimed at %v, due %v", m.ID, m.ClaimedAt, m.Due)
	}
	inv, takeInv := inversion(got), inversion(byTake)
	t.Logf("due order broken by at most %v (Partitioned.Take: %v)", inv, takeInv)
	// Within Take's, but for scheduling noise between the two runs.
	require.LessOrEqual(t, inv, takeInv+100*time.Millisecond)
	auditP(t, p)
	st, err := p.Stats(ctx)
	require.NoError(t, err)
	require.Zero(t, st.Scheduled+st.InFlight, "left: %+v", st)
}

// A Worker over an ordinary and a Partitioned queue takes from both, each
// item once; closing either queue ends Run with ErrClosed.
func TestMultiWorkerMixedAndClosed(t *testing.T) {
	noLeaks(t)
	s := startRedis(t, "--appendfsync", "everysec")
	c := s.client(t)
	ctx := context.Background()
	q := newQueue(t, c, "plain")
	p := newPartitioned(t, c, "parts", 2)
	var mu sync.Mutex
	counts := map[string]int{}
	h := func(ctx context.Context, m *Message) error {
		mu.Lock()
		counts[m.ID]++
		mu.Unlock()
		return nil
	}
	w := NewMultiWorker(h, WorkerOptions{Concurrency: 3, NoRecurring: true},
		WorkerQueue{Queue: q, Weight: 2}, WorkerQueue{Partitioned: p})
	res := runWorker(t, w)
	const n = 200
	for i := range n {
		_, err := q.EnqueueAfter(ctx, "q"+strconv.Itoa(i), nil, time.Duration(i%20)*5*time.Millisecond)
		require.NoError(t, err)
		_, err = p.EnqueueAfter(ctx, "p"+strconv.Itoa(i), nil, time.Duration(i%20)*5*time.Millisecond)
		require.NoError(t, err)
	}
	eventually(t, time.Minute, "every item handled", func() bool { mu.Lock(); defer mu.Unlock(); return len(counts) == 2*n })
	// Each once: nothing more comes.
	time.Sleep(200 * time.Millisecond)
	mu.Lock()
	for id, k := range counts {
		require.Equal(t, 1, k, "%s", id)
	}
	mu.Unlock()
	audit(t, q)
	auditP(t, p)

	require.NoError(t, p.Close())
	select {
	case err := <-res:
		require.ErrorIs(t, err, ErrClosed)
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return after a queue was closed")
	}
}

// With every handler busy on a slow queue, an item of another queue
// waits in Redis, not leased; it runs when a handler is free.
func TestMultiWorkerLeasesOnlyForIdleHandlers(t *testing.T) {
	noLeaks(t)
	s := startRedis(t, "--appendfsync", "everysec")
	c := s.client(t)
	ctx := context.Background()
	a, b := newQueue(t, c, "a"), newQueue(t, c, "b")
	release := make(chan struct{})
	var started atomic.Int32
	h := func(ctx context.Context, m *Message) error {
		started.Add(1)
		if m.QueueName() == "a" {
			<-release
		}
		return nil
	}
	w := NewMultiWorker(h, WorkerOptions{Concurrency: 2, NoRecurring: true}, WorkerQueue{Queue: a}, WorkerQueue{Queue: b})
	runWorker(t, w)
	fill(t, a, "a", 2)
	eventually(t, 10*time.Second, "both handlers busy", func() bool { return started.Load() == 2 })
	fill(t, b, "b", 1)
	time.Sleep(300 * time.Millisecond)
	st, err := b.Stats(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(0), st.InFlight, "leased with no handler free")
	require.Equal(t, int64(1), st.DueBacklog)
	close(release)
	eventually(t, 10*time.Second, "b's item handled", func() bool { return started.Load() == 3 })
}

func TestNewMultiWorkerPanics(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	q, q2 := newQueue(t, c, "x"), newQueue(t, c, "y")
	p := newPartitioned(t, c, "pp", 2)
	h := func(context.Context, *Message) error { return nil }
	for name, f := range map[string]func(){
		"no queues": func() { NewMultiWorker(h, WorkerOptions{}) },
		"neither":   func() { NewMultiWorker(h, WorkerOptions{}, WorkerQueue{Queue: q}, WorkerQueue{}) },
		"both":      func() { NewMultiWorker(h, WorkerOptions{}, WorkerQueue{Queue: q, Partitioned: p}) },
		"negative":  func() { NewMultiWorker(h, WorkerOptions{}, WorkerQueue{Queue: q}, WorkerQueue{Queue: q2, Weight: -1}) },
		"twice":     func() { NewMultiWorker(h, WorkerOptions{}, WorkerQueue{Queue: q}, WorkerQueue{Queue: q}) },
		"partition too": func() {
			NewMultiWorker(h, WorkerOptions{}, WorkerQueue{Partitioned: p}, WorkerQueue{Queue: p.Partition(0)})
		},
		"nil handler": func() { NewMultiWorker(nil, WorkerOptions{}, WorkerQueue{Queue: q}, WorkerQueue{Queue: q2}) },
	} {
		func() {
			defer func() {
				r := recover()
				require.NotNil(t, r, name)
				require.Contains(t, r, "redisq:", name)
			}()
			f()
		}()
	}
	// A single ordinary queue is NewWorker's worker: its source alone.
	w := NewMultiWorker(h, WorkerOptions{}, WorkerQueue{Queue: q})
	require.Len(t, w.srcs, 1)
	require.True(t, w.srcs[0].alone)
}

// On a Cluster of three masters: a worker over two ordinary queues and a
// Partitioned one (a partition per master) handles every item once and
// never early, while one queue's slot moves to another master.
func TestMultiWorkerCluster(t *testing.T) {
	noLeaks(t)
	c := redistest.NewClusterWith(t, redistest.ClusterOptions{Masters: 3})
	cc := clusterClient(t, c)
	ctx := context.Background()
	a, b := newQueue(t, cc, "ca"), newQueue(t, cc, "cb")
	p := newPartitioned(t, cc, "cp", 3)
	var mu sync.Mutex
	counts := map[string]int{}
	var early []string
	h := func(ctx context.Context, m *Message) error {
		mu.Lock()
		defer mu.Unlock()
		counts[m.ID]++
		if m.ClaimedAt.Before(m.Due) {
			early = append(early, m.ID)
		}
		return nil
	}
	w := NewMultiWorker(h, WorkerOptions{Concurrency: 4, NoRecurring: true},
		WorkerQueue{Queue: a, Weight: 3}, WorkerQueue{Queue: b}, WorkerQueue{Partitioned: p, Weight: 2})
	runWorker(t, w)
	const n = 150
	enqueue := func(from, to int) {
		for i := from; i < to; i++ {
			d := time.Duration(i%30) * 10 * time.Millisecond
			for _, e := range []func() (time.Time, error){
				func() (time.Time, error) { return a.EnqueueAfter(ctx, "a"+strconv.Itoa(i), nil, d) },
				func() (time.Time, error) { return b.EnqueueAfter(ctx, "b"+strconv.Itoa(i), nil, d) },
				func() (time.Time, error) { return p.EnqueueAfter(ctx, "p"+strconv.Itoa(i), nil, d) },
			} {
				_, err := e()
				require.NoError(t, err)
			}
		}
	}
	enqueue(0, n/2)
	src, err := c.MasterOf(ctx, a.db.Keys.Sched)
	require.NoError(t, err)
	for _, s := range c.Servers[:3] {
		if s != src {
			migrateSlot(t, c, a.db.Keys.Sched, s)
			break
		}
	}
	enqueue(n/2, n)
	eventually(t, time.Minute, "every item handled", func() bool { mu.Lock(); defer mu.Unlock(); return len(counts) == 3*n })
	time.Sleep(200 * time.Millisecond) // nothing more comes
	mu.Lock()
	for id, k := range counts {
		require.Equal(t, 1, k, "%s", id)
	}
	require.Empty(t, early, "claimed before they were due")
	mu.Unlock()
	audit(t, a)
	audit(t, b)
	auditP(t, p)
}

// A Partitioned queue among other queues: an item enqueued into it while
// the worker is idle is claimed at once, not at the wake cap (its
// partitions' own waits in Partitioned's taker and the worker's waiter
// share the marker: the wake-up must reach the taker).
func TestMultiWorkerMixedPartitionedWakes(t *testing.T) {
	noLeaks(t)
	s := startRedis(t, "--appendfsync", "everysec")
	c := s.client(t)
	ctx := context.Background()
	const wakeCap = 20 * time.Second
	q := newQueue(t, c, "plain", WithWakeCap(wakeCap))
	p := newPartitioned(t, c, "parts", 2, WithWakeCap(wakeCap))
	var mu sync.Mutex
	var late []time.Duration
	h := func(ctx context.Context, m *Message) error {
		mu.Lock()
		late = append(late, m.ClaimedAt.Sub(m.Due))
		mu.Unlock()
		return nil
	}
	w := NewMultiWorker(h, WorkerOptions{Concurrency: 3, NoRecurring: true},
		WorkerQueue{Queue: q}, WorkerQueue{Partitioned: p})
	runWorker(t, w)
	const n = 20
	for i := range n {
		_, err := p.EnqueueAfter(ctx, "p"+strconv.Itoa(i), nil, 0)
		require.NoError(t, err)
		time.Sleep(time.Duration(50+(i*37)%300) * time.Millisecond)
	}
	eventually(t, time.Minute, "every item handled", func() bool { mu.Lock(); defer mu.Unlock(); return len(late) == n })
	mu.Lock()
	defer mu.Unlock()
	worst := slices.Max(late)
	t.Logf("claimed at most %v after due", worst)
	require.Less(t, worst, 2*time.Second, "an item waited for a wake cap (%v)", wakeCap)
}

// A queue whose server is down does not take the handlers from the
// others: its taker pauses between failed claims without holding any.
func TestMultiWorkerQueueDown(t *testing.T) {
	for _, strict := range []bool{false, true} {
		t.Run("strict="+strconv.FormatBool(strict), func(t *testing.T) {
			noLeaks(t)
			s1, s2 := startRedis(t, "--appendfsync", "everysec"), startRedis(t, "--appendfsync", "everysec")
			c1 := s1.client(t, func(o *redis.Options) { o.MaxRetries = -1; o.DialTimeout = 100 * time.Millisecond })
			c2 := s2.client(t)
			a, b := newQueue(t, c1, "a"), newQueue(t, c2, "b")
			var done atomic.Int32
			h := func(ctx context.Context, m *Message) error {
				time.Sleep(5 * time.Millisecond)
				done.Add(1)
				return nil
			}
			w := NewMultiWorker(h, WorkerOptions{Concurrency: 4, NoRecurring: true, StrictPriority: strict, Heartbeat: -1},
				WorkerQueue{Queue: a, Weight: 3}, WorkerQueue{Queue: b, Weight: 1})
			fill(t, a, "a", 5000)
			runWorker(t, w)
			eventually(t, 10*time.Second, "a's items running", func() bool { return done.Load() > 20 })
			s1.kill()
			time.Sleep(300 * time.Millisecond)
			done.Store(0)
			const n = 200
			fill(t, b, "b", n)
			start := time.Now()
			// 4 handlers of 5 ms: about 0.25 s; one that a dead queue held
			// would take minutes.
			eventually(t, 20*time.Second, "b's items handled while a is down", func() bool { return done.Load() >= n })
			t.Logf("b's %d items in %v with a down", n, time.Since(start))
		})
	}
}

// The heartbeat of a worker over several queues is on each of them (each
// partition), listing the messages of that queue that its handlers run;
// Shutdown removes it from all.
func TestMultiWorkerHeartbeat(t *testing.T) {
	noLeaks(t)
	s := startRedis(t, "--appendfsync", "everysec")
	c := s.client(t)
	ctx := context.Background()
	q := newQueue(t, c, "hq")
	p := newPartitioned(t, c, "hp", 2)
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	var started atomic.Int32
	h := func(ctx context.Context, m *Message) error {
		started.Add(1)
		<-release
		return nil
	}
	w := NewMultiWorker(h, WorkerOptions{Concurrency: 4, NoRecurring: true, Heartbeat: 50 * time.Millisecond, Name: "multi"},
		WorkerQueue{Queue: q}, WorkerQueue{Partitioned: p})
	res := runWorker(t, w)
	t.Cleanup(free) // before runWorker's Shutdown, should the test fail
	_, err := q.EnqueueAfter(ctx, "q1", nil, 0)
	require.NoError(t, err)
	p0, p1 := partKeyFor(p, "p", 0), partKeyFor(p, "p", 1)
	for _, id := range []string{p0, p1} {
		_, err := p.EnqueueAfter(ctx, id, nil, 0)
		require.NoError(t, err)
	}
	eventually(t, 10*time.Second, "three handlers running", func() bool { return started.Load() == 3 })
	// leases lists the leases of ws, the multi worker's alone, which holds
	// the messages of every queue (nil otherwise).
	leases := func(ws []WorkerInfo) []string {
		var ids []string
		for _, wi := range ws {
			if wi.Name != "multi" || wi.Held != 3 {
				return nil
			}
			for _, l := range wi.Leases {
				ids = append(ids, l.ID)
			}
		}
		return ids
	}
	eventually(t, 10*time.Second, "every queue's heartbeat lists its own lease", func() bool {
		qw, err := q.Workers(ctx)
		require.NoError(t, err)
		w0, err := p.Partition(0).Workers(ctx)
		require.NoError(t, err)
		w1, err := p.Partition(1).Workers(ctx)
		require.NoError(t, err)
		return len(qw) == 1 && len(w0) == 1 && len(w1) == 1 &&
			slices.Equal(leases(qw), []string{"q1"}) && slices.Equal(leases(w0), []string{p0}) && slices.Equal(leases(w1), []string{p1})
	})
	free()
	shutdown(t, w)
	require.NoError(t, <-res)
	for _, x := range []*Queue{q, p.Partition(0), p.Partition(1)} {
		ws, err := x.Workers(ctx)
		require.NoError(t, err)
		require.Empty(t, ws, "%s still lists the worker after Shutdown", x.Name())
	}
}

// Pausing one queue of a multi-queue worker stops its claims alone, with
// no claim loop meanwhile; Resume wakes the worker for its items at once.
func TestMultiWorkerPausedQueue(t *testing.T) {
	noLeaks(t)
	s := startRedis(t, "--appendfsync", "everysec")
	c := s.client(t)
	h0 := &countHook{}
	c.AddHook(h0)
	ctx := context.Background()
	const wakeCap = 20 * time.Second
	a, b := newQueue(t, c, "pa", WithWakeCap(wakeCap)), newQueue(t, c, "pb", WithWakeCap(wakeCap))
	var mu sync.Mutex
	got := map[string]int{}
	h := func(ctx context.Context, m *Message) error {
		mu.Lock()
		got[m.QueueName()]++
		mu.Unlock()
		return nil
	}
	require.NoError(t, a.Pause(ctx))
	w := NewMultiWorker(h, WorkerOptions{Concurrency: 2, NoRecurring: true, Heartbeat: -1}, WorkerQueue{Queue: a}, WorkerQueue{Queue: b})
	runWorker(t, w)
	fill(t, a, "a", 10)
	fill(t, b, "b", 10)
	count := func(q string) int { mu.Lock(); defer mu.Unlock(); return got[q] }
	eventually(t, 10*time.Second, "b's items handled and acked", func() bool {
		st, err := b.Stats(ctx)
		require.NoError(t, err)
		return count("pb") == 10 && st.Scheduled+st.InFlight == 0
	})
	ev0 := h0.eval.Load()
	time.Sleep(time.Second)
	require.Zero(t, count("pa"), "a paused queue's items ran")
	require.LessOrEqual(t, h0.eval.Load()-ev0, int64(4), "scripts sent while one queue is paused and the other idle")
	start := time.Now()
	require.NoError(t, a.Resume(ctx))
	eventually(t, 10*time.Second, "a's items handled after Resume", func() bool { return count("pa") == 10 })
	require.Less(t, time.Since(start), wakeCap/2, "Resume did not wake the worker")
}

// Each queue's acks go apart: with one queue's server stopped (SIGSTOP),
// the acks of the other queue's messages are not held up behind its
// timing-out ones.
func TestMultiWorkerAcksPerQueue(t *testing.T) {
	noLeaks(t)
	s1, s2 := startRedis(t, "--appendfsync", "everysec"), startRedis(t, "--appendfsync", "everysec")
	c1 := s1.client(t, func(o *redis.Options) { o.MaxRetries = -1; o.ReadTimeout = 3 * time.Second })
	c2 := s2.client(t)
	ctx := context.Background()
	a, b := newQueue(t, c1, "a"), newQueue(t, c2, "b")
	var done atomic.Int32
	h := func(ctx context.Context, m *Message) error {
		time.Sleep(2 * time.Millisecond)
		done.Add(1)
		return nil
	}
	w := NewMultiWorker(h, WorkerOptions{Concurrency: 4, NoRecurring: true, Heartbeat: -1},
		WorkerQueue{Queue: a}, WorkerQueue{Queue: b})
	fill(t, a, "a", 20000)
	runWorker(t, w)
	eventually(t, 10*time.Second, "a's items running", func() bool { return done.Load() > 50 })
	s1.signal(syscall.SIGSTOP)
	fill(t, b, "b", 200)
	start := time.Now()
	eventually(t, 30*time.Second, "b's items acked", func() bool {
		st, err := b.Stats(ctx)
		require.NoError(t, err)
		return st.Scheduled+st.InFlight == 0
	})
	took := time.Since(start)
	t.Logf("b's 200 items handled and acked in %v with a's server stopped", took)
	// a's claim under way when the server stopped holds its handlers for
	// one read timeout (3 s); b's acks must not wait for a's acks' retries
	// (three read timeouts each) on top.
	require.Less(t, took, 6500*time.Millisecond)
	s1.signal(syscall.SIGCONT)
}
