package redisq

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dq-go/delayqueue/redisq/redistest"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// newPartitioned returns a partitioned queue closed at test cleanup.
func newPartitioned(t testing.TB, c redis.UniversalClient, name string, parts int, opts ...Option) *Partitioned {
	t.Helper()
	p, err := NewPartitioned(context.Background(), c, name, parts, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// partKeyFor returns a key of the form prefix+N that routes to partition i.
func partKeyFor(p *Partitioned, prefix string, i int) string {
	for n := 0; ; n++ {
		k := prefix + strconv.Itoa(n)
		if p.PartitionOf(k) == i {
			return k
		}
	}
}

// auditP fails the test unless every partition is consistent.
func auditP(t testing.TB, p *Partitioned) *AuditReport {
	t.Helper()
	r, err := p.Audit(context.Background())
	require.NoError(t, err)
	require.True(t, r.OK(), "audit problems: %v (+%d more)", r.Problems, r.More)
	return r
}

// The routing of ids and keys is part of the stored data's format: it must
// never change, or items would be looked for in the wrong partition.
func TestPartitionedRoutingStable(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	ctx := context.Background()
	p := newPartitioned(t, c, "route", 7)
	// FNV-1a 32 of the bytes, mod 7 (fixed values: a change of the hash
	// function or of the modulus fails here).
	want := map[string]int{"": 2, "a": 5, "order:1": 5, "order:2": 0, "user/42": 3, "\xff\xfe": 3}
	for k, i := range want {
		require.Equal(t, i, p.PartitionOf(k), "key %q", k)
		require.Same(t, p.Partition(i), p.Route(k))
	}
	require.Equal(t, []string{"route~0.41", "route~1.9", "route~2.11", "route~3.11", "route~4.21", "route~5.3", "route~6.2"},
		PartitionLayout("route", 7))

	// The layout's rule: partition i's tag is in the i-th slot range, one
	// slot away from its ends, with the smallest suffix that does it.
	for _, parts := range []int{1, 2, 3, 7, 16, MaxPartitions} {
		for _, name := range []string{"q", "emails", "jobs:high", "a~0.1", "\xff"} {
			for i, n := range PartitionLayout(name, parts) {
				lo, hi := i*16384/parts+1, (i+1)*16384/parts-1
				prefix, j, ok := strings.Cut(strings.TrimPrefix(n, name+"~"), ".")
				require.True(t, ok, n)
				require.Equal(t, strconv.Itoa(i), prefix, n)
				jn, err := strconv.Atoi(j)
				require.NoError(t, err)
				for k := 0; k <= jn; k++ {
					sl := keySlot("dq:" + name + "~" + prefix + "." + strconv.Itoa(k))
					require.Equal(t, k == jn, sl >= lo && sl < hi, "%s: suffix %d, slot %d, range [%d, %d)", n, k, sl, lo, hi)
				}
			}
		}
	}

	// Items live in the partition of their id, and the id calls find them.
	for i := range 50 {
		id := "id" + strconv.Itoa(i)
		_, err := p.EnqueueAfter(ctx, id, []byte(id), time.Hour)
		require.NoError(t, err)
		it, err := p.Partition(p.PartitionOf(id)).Get(ctx, id)
		require.NoError(t, err)
		require.Equal(t, id, string(it.Payload))
		it, err = p.Get(ctx, id)
		require.NoError(t, err)
		require.Equal(t, id, it.ID)
		at, err := p.Locate(ctx, id)
		require.NoError(t, err)
		require.Equal(t, []int{p.PartitionOf(id)}, at)
	}
	// Another Partitioned value of the same queue routes the same way.
	p2 := newPartitioned(t, c, "route", 7)
	for i := range 50 {
		_, err := p2.RescheduleAfter(ctx, "id"+strconv.Itoa(i), 2*time.Hour)
		require.NoError(t, err)
	}
	_, err := p.Locate(ctx, "nope")
	require.ErrorIs(t, err, ErrNotFound)
	st, err := p.Stats(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 50, st.Scheduled)
	require.EqualValues(t, 50, st.Rescheduled)
	auditP(t, p)
}

// P is fixed when the queue is created and checked by every New; an
// ordinary queue's name and a damaged table are refused.
func TestPartitionedCountChecked(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	ctx := context.Background()
	newPartitioned(t, c, "fixed", 3)
	_, err := NewPartitioned(ctx, c, "fixed", 4)
	require.ErrorIs(t, err, ErrPartitions)
	require.ErrorContains(t, err, "has 3 partitions, not 4")
	p, err := OpenPartitioned(ctx, c, "fixed")
	require.NoError(t, err)
	require.Equal(t, 3, p.NumPartitions())
	require.NoError(t, p.Close())
	names, err := PartitionNames(ctx, c, "fixed")
	require.NoError(t, err)
	require.Equal(t, PartitionLayout("fixed", 3), names)

	_, err = OpenPartitioned(ctx, c, "never")
	require.ErrorIs(t, err, ErrNoQueue)
	for _, n := range []int{0, -1, MaxPartitions + 1} {
		_, err = NewPartitioned(ctx, c, "bad", n)
		require.Error(t, err)
	}
	_, err = NewPartitioned(ctx, c, "a{b}", 2)
	require.Error(t, err)

	// An ordinary queue keeps its name.
	q := newQueue(t, c, "plain")
	_, err = q.EnqueueAfter(ctx, "x", nil, time.Hour)
	require.NoError(t, err)
	_, err = NewPartitioned(ctx, c, "plain", 2)
	require.ErrorContains(t, err, "is an ordinary queue")

	// A table that is not what this version writes is an error, not a crash.
	for _, bad := range [][]interface{}{
		{"n", "x", "v", "1"},
		{"n", "2", "v", "9", "p0", "t~0", "p1", "t~1"},
		{"n", "2", "v", "1", "p0", "t~0"},
		{"n", "2", "v", "1", "p0", "t~0", "p1", "t~0"},
		{"n", "2", "v", "1", "p0", "t~0", "p1", "other"},
		{"n", "2", "v", "1", "p0", "t~0", "p1", "t~{x}"},
	} {
		require.NoError(t, c.Del(ctx, partitionsKey("t")).Err())
		require.NoError(t, c.HSet(ctx, partitionsKey("t"), bad...).Err())
		_, err = OpenPartitioned(ctx, c, "t")
		require.ErrorIs(t, err, ErrBadPartitionTable, "%q", bad)
		require.ErrorContains(t, err, "bad partition table", "%q", bad)
		_, err = NewPartitioned(ctx, c, "t", 2)
		require.Error(t, err, "%q", bad)
	}
}

// Regression (issue 24): a damaged partition table opened silently. HSET
// n 2 on a queue of 3 opened it as 2 partitions (Stats saw 21 of 30 items,
// Audit reported ok); a renamed or swapped partition opened too. Every
// such table, and a consistent table of fewer partitions than hold data,
// is now refused with ErrBadPartitionTable and reported by Audit, and a
// refused NewPartitioned creates nothing.
func TestPartitionedDamagedTableRefused(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	ctx := context.Background()
	p := newPartitioned(t, c, "ptab", 3)
	for i := range 30 {
		_, err := p.EnqueueAfter(ctx, "id"+strconv.Itoa(i), nil, time.Hour)
		require.NoError(t, err)
	}
	key := partitionsKey("ptab")
	good, err := c.HGetAll(ctx, key).Result()
	require.NoError(t, err)
	three, two := PartitionLayout("ptab", 3), PartitionLayout("ptab", 2)
	refused := func(what string, damage func()) {
		t.Helper()
		damage()
		_, err := OpenPartitioned(ctx, c, "ptab")
		require.ErrorIs(t, err, ErrBadPartitionTable, what)
		for _, n := range []int{2, 3} {
			_, err = NewPartitioned(ctx, c, "ptab", n)
			require.Error(t, err, what)
			if !errors.Is(err, ErrPartitions) {
				require.ErrorIs(t, err, ErrBadPartitionTable, what)
			}
		}
		_, err = PartitionNames(ctx, c, "ptab")
		require.ErrorIs(t, err, ErrBadPartitionTable, what)
		r, err := p.Audit(ctx)
		require.NoError(t, err)
		require.False(t, r.OK(), "%s: Audit reported ok", what)
		require.Contains(t, strings.Join(r.Problems, "\n"), "bad partition table", what)
		// Put the table back as it was.
		require.NoError(t, c.Del(ctx, key).Err())
		for f, v := range good {
			require.NoError(t, c.HSet(ctx, key, f, v).Err())
		}
	}
	refused("count lowered", func() { require.NoError(t, c.HSet(ctx, key, "n", 2).Err()) })
	refused("count raised", func() { require.NoError(t, c.HSet(ctx, key, "n", 4, "p3", "ptab~3.0").Err()) })
	refused("partition renamed", func() { require.NoError(t, c.HSet(ctx, key, "p1", "ptab~1.999").Err()) })
	refused("partitions swapped", func() { require.NoError(t, c.HSet(ctx, key, "p0", three[1], "p1", three[0]).Err()) })
	refused("unknown field", func() { require.NoError(t, c.HSet(ctx, key, "x", 1).Err()) })
	refused("a table of 2 over 3 partitions' data", func() {
		require.NoError(t, c.Del(ctx, key).Err())
		require.NoError(t, c.HSet(ctx, key, "n", 2, "v", 1, "p0", two[0], "p1", two[1]).Err())
	})
	// The table lost: a NewPartitioned of fewer partitions is refused and
	// writes no table, one of the same count takes the queue back.
	require.NoError(t, c.Del(ctx, key).Err())
	_, err = NewPartitioned(ctx, c, "ptab", 2)
	require.ErrorIs(t, err, ErrBadPartitionTable)
	require.ErrorContains(t, err, three[2])
	n, err := c.Exists(ctx, key).Result()
	require.NoError(t, err)
	require.Zero(t, n, "a refused NewPartitioned created the table")
	p2 := newPartitioned(t, c, "ptab", 3)
	st, err := p2.Stats(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 30, st.Scheduled)
	auditP(t, p)
}

// partLedger records every delivery and ack of a run.
type partLedger struct {
	mu        sync.Mutex
	delivered map[string]int
	acked     map[string]int
	early     []string
}

func newPartLedger() *partLedger {
	return &partLedger{delivered: map[string]int{}, acked: map[string]int{}}
}

func (l *partLedger) got(ms ...*Message) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, m := range ms {
		l.delivered[m.ID]++
		if m.ClaimedAt.Before(m.Due) {
			l.early = append(l.early, m.ID)
		}
	}
}

func (l *partLedger) ack(m *Message, err error) {
	if err != nil {
		return
	}
	l.mu.Lock()
	l.acked[m.ID]++
	l.mu.Unlock()
}

// Every item is delivered and acked exactly once across partitions with
// concurrent takers of every kind, never before its due time, and each
// partition's invariants hold.
func TestPartitionedLedgerConcurrentTakers(t *testing.T) {
	s := startRedis(t, "--appendfsync", "everysec")
	c := s.client(t, func(o *redis.Options) { o.PoolSize = 64 })
	ctx := context.Background()
	const n, takers = 3000, 9
	p := newPartitioned(t, c, "ledger", 3, WithVisibilityTimeout(time.Minute), WithWakeCap(time.Second))
	l := newPartLedger()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for g := range takers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var done *Message
			for ctx.Err() == nil {
				switch g % 3 {
				case 0: // Take + Ack
					m, err := p.Take(ctx)
					if err != nil {
						continue
					}
					l.got(m)
					l.ack(m, m.Ack(context.Background()))
				case 1: // AckTake
					m, err := p.AckTake(ctx, done)
					if done != nil {
						switch {
						case err == nil:
							l.ack(done, nil)
						case errors.Is(err, ErrLeaseLost):
						default: // maybe not acked: settle it
							l.ack(done, done.Ack(context.Background()))
						}
					}
					done = nil
					if err != nil {
						continue
					}
					l.got(m)
					done = m
				case 2: // TakeBatch + AckMany
					ms, err := p.TakeBatch(ctx, 1+rand.IntN(50))
					if err != nil {
						continue
					}
					l.got(ms...)
					for i, err := range p.AckMany(context.Background(), ms) {
						l.ack(ms[i], err)
					}
				}
			}
			if done != nil {
				l.ack(done, done.Ack(context.Background()))
			}
		}()
	}
	// Producers: single enqueues and batches, due from now to 300ms on.
	ids := make([]string, n)
	for i := range ids {
		ids[i] = "item" + strconv.Itoa(i)
	}
	for lo := 0; lo < n; lo += 100 {
		if lo%200 == 0 {
			items := make([]EnqueueItem, 0, 100)
			for _, id := range ids[lo : lo+100] {
				items = append(items, EnqueueItem{ID: id, After: time.Duration(rand.IntN(300)) * time.Millisecond})
			}
			res, err := p.EnqueueMany(context.Background(), items)
			require.NoError(t, err)
			for _, r := range res {
				require.NoError(t, r.Err)
			}
			continue
		}
		for _, id := range ids[lo : lo+100] {
			_, err := p.EnqueueAfter(context.Background(), id, nil, time.Duration(rand.IntN(300))*time.Millisecond)
			require.NoError(t, err)
		}
	}
	eventually(t, 60*time.Second, "every item acked", func() bool {
		st, err := p.Stats(context.Background())
		require.NoError(t, err)
		return st.Acked == n
	})
	cancel()
	wg.Wait()

	l.mu.Lock()
	defer l.mu.Unlock()
	require.Empty(t, l.early, "claimed before due")
	for _, id := range ids {
		require.Equal(t, 1, l.acked[id], "acks of %s", id)
		require.Equal(t, 1, l.delivered[id], "deliveries of %s", id)
	}
	require.Len(t, l.acked, n)
	st, err := p.Stats(context.Background())
	require.NoError(t, err)
	require.EqualValues(t, n, st.Enqueued)
	require.EqualValues(t, n, st.Acked)
	require.Zero(t, st.Scheduled+st.InFlight+st.Dead, "%+v", st)
	for i := range 3 {
		ps, err := p.Partition(i).Stats(context.Background())
		require.NoError(t, err)
		require.Greater(t, ps.Acked, int64(n/6), "partition %d carries its share", i)
	}
	auditP(t, p)
}

// Items that share an ordering key stay FIFO among equal due times and in
// due order; ids alone spread over the partitions.
func TestPartitionedFIFOPerKey(t *testing.T) {
	s := startRedis(t, "--appendfsync", "everysec")
	c := s.client(t)
	ctx := context.Background()
	p := newPartitioned(t, c, "fifo", 3)
	keys := []string{"user:1", "user:2", "user:3", "user:4", "user:5", "user:6"}
	at := redisNow(t, c).Add(-time.Second).Truncate(time.Millisecond) // one due time for all
	const per = 60
	for i := range per {
		for _, k := range keys {
			// Each key's items alternate between the shared due time and
			// later ones, so both FIFO and due order are exercised.
			due := at
			if i%3 == 2 {
				due = at.Add(time.Duration(i) * time.Millisecond)
			}
			require.NoError(t, p.Route(k).Enqueue(ctx, k+"#"+strconv.Itoa(i), nil, due))
		}
	}
	parts := map[int]bool{}
	for _, k := range keys {
		parts[p.PartitionOf(k)] = true
	}
	require.Greater(t, len(parts), 1, "the keys spread over partitions")

	got := map[string][]int{}
	var prevDue = map[string]time.Time{}
	for range per * len(keys) {
		ms, err := p.TakeBatch(ctx, 1+rand.IntN(4))
		require.NoError(t, err)
		for _, m := range ms {
			k, num, _ := strings.Cut(m.ID, "#")
			i, _ := strconv.Atoi(num)
			require.False(t, m.Due.Before(prevDue[k]), "%s handed out after a later item of its key", m.ID)
			prevDue[k] = m.Due
			got[k] = append(got[k], i)
			require.NoError(t, m.Ack(ctx))
		}
		if len(got) == len(keys) && func() bool {
			for _, v := range got {
				if len(v) < per {
					return false
				}
			}
			return true
		}() {
			break
		}
	}
	for _, k := range keys {
		// Due order, FIFO among equal due times: the shared due time's
		// items in enqueue order, then the later ones by due time.
		var want []int
		for i := range per {
			if i%3 != 2 {
				want = append(want, i)
			}
		}
		for i := range per {
			if i%3 == 2 {
				want = append(want, i)
			}
		}
		require.Equal(t, want, got[k], "key %s", k)
	}
	auditP(t, p)
}

// A backlog in one partition is drained before the later items of another:
// partitions are merged by due time, not shared out in turns.
func TestPartitionedMergesByDueTime(t *testing.T) {
	s := startRedis(t, "--appendfsync", "everysec")
	c := s.client(t)
	ctx := context.Background()
	p := newPartitioned(t, c, "merge", 2)
	now := redisNow(t, c)
	const n = 200
	old, fresh := partKeyFor(p, "old", 0), partKeyFor(p, "fresh", 1)
	for i := range n {
		require.NoError(t, p.Route(old).Enqueue(ctx, "old"+strconv.Itoa(i), nil, now.Add(-time.Hour+time.Duration(i)*time.Millisecond)))
		require.NoError(t, p.Route(fresh).Enqueue(ctx, "fresh"+strconv.Itoa(i), nil, now.Add(-time.Minute+time.Duration(i)*time.Millisecond)))
	}
	var order []string
	for range 2 * n {
		m, err := p.Take(ctx)
		require.NoError(t, err)
		require.NoError(t, m.Ack(ctx))
		order = append(order, m.ID)
	}
	last := 0
	for i, id := range order {
		if strings.HasPrefix(id, "old") {
			last = i
		}
	}
	early := 0
	for _, id := range order[:last] {
		if strings.HasPrefix(id, "fresh") {
			early++
		}
	}
	// Only while a claim of the old partition is under way can a fresh
	// item go first (see Take): a few of its claims, never turns.
	t.Logf("fresh items handed out before the last old one: %d of %d", early, n)
	require.Less(t, early, n/5)
	auditP(t, p)
}

// Never early, by each partition's clock, across partitions and delays.
func TestPartitionedNeverEarly(t *testing.T) {
	s := startRedis(t, "--appendfsync", "everysec")
	c := s.client(t)
	ctx := context.Background()
	p := newPartitioned(t, c, "early", 3)
	const n = 300
	dues := map[string]time.Time{}
	for i := range n {
		id := "e" + strconv.Itoa(i)
		before := redisNow(t, c)
		d := time.Duration(rand.IntN(400))*time.Millisecond + time.Duration(rand.IntN(1000))*time.Microsecond
		due, err := p.EnqueueAfter(ctx, id, nil, d)
		require.NoError(t, err)
		require.False(t, due.Before(before.Add(d)), "due %v before TIME %v + %v", due, before, d)
		dues[id] = due
	}
	for range n {
		m, err := p.Take(ctx)
		require.NoError(t, err)
		require.Equal(t, dues[m.ID], m.Due)
		require.False(t, m.ClaimedAt.Before(m.Due), "%s claimed at %v, due %v", m.ID, m.ClaimedAt, m.Due)
		require.NoError(t, m.Ack(ctx))
	}
}

// A taker blocked on an empty partitioned queue waits on every partition
// without polling (per partition, one BZPOPMIN and one claim per wake cap),
// and wakes for an item enqueued into any partition.
func TestPartitionedWakeWithoutPolling(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	h := &countHook{}
	c.AddHook(h)
	const wakeCap, parts = 250 * time.Millisecond, 3
	p := newPartitioned(t, c, "idle", parts, WithWakeCap(wakeCap))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _, _ = p.Take(ctx) }()
	eventually(t, 5*time.Second, "blocked on every partition", func() bool { return h.bzpopmin.Load() >= parts })
	total0, bz0, ev0 := h.total.Load(), h.bzpopmin.Load(), h.eval.Load()
	const idle = 1500 * time.Millisecond
	time.Sleep(idle)
	total, bz, ev := h.total.Load()-total0, h.bzpopmin.Load()-bz0, h.eval.Load()-ev0
	cancel()
	<-done
	// With no caller left, the partitions' waits end soon (500ms).
	eventually(t, 10*time.Second, "no partition waits", func() bool { return blockedClients(t, p.Partition(0)) == 0 })
	t.Logf("idle %v, wake cap %v, %d partitions: %d commands (%d BZPOPMIN, %d EVALSHA)", idle, wakeCap, parts, total, bz, ev)
	maxWaits := parts * (int64(idle/wakeCap) + 1)
	require.LessOrEqual(t, bz, maxWaits)
	require.GreaterOrEqual(t, bz, maxWaits-3*parts, "the partitions' takers should be blocking, one wait per cap each")
	require.LessOrEqual(t, ev, bz+parts, "one claim per wait")
	require.Equal(t, total, bz+ev, "nothing else is sent while idle")

	require.NoError(t, p.Close())

	// With a long wake cap, an item in any partition wakes the taker at
	// once, not at the cap.
	p2 := newPartitioned(t, c, "wake", parts, WithWakeCap(20*time.Second))
	for i := range parts {
		got := make(chan *Message, 1)
		go func() {
			m, err := p2.Take(context.Background())
			if err == nil {
				got <- m
			}
			close(got)
		}()
		eventually(t, 5*time.Second, "blocked on every partition", func() bool { return blockedClients(t, p2.Partition(i)) == parts })
		start := time.Now()
		id := partKeyFor(p2, "wake", i)
		_, err := p2.EnqueueAfter(context.Background(), id, nil, 0)
		require.NoError(t, err)
		m, ok := <-got
		require.True(t, ok)
		require.Equal(t, id, m.ID)
		require.Less(t, time.Since(start), 10*time.Second, "woken by the item, not the 20s cap")
		require.NoError(t, m.Ack(context.Background()))
	}
}

// Items claimed beyond what callers take are released, with no attempt
// counted: when no caller waits any more, and at Close.
func TestPartitionedReleasesWhatNobodyTakes(t *testing.T) {
	s := startRedis(t, "--appendfsync", "everysec")
	c := s.client(t)
	ctx := context.Background()
	p, err := NewPartitioned(ctx, c, "surplus", 3)
	require.NoError(t, err)
	defer p.Close()
	for i := range 3 {
		for j := range 5 {
			require.NoError(t, p.Route(partKeyFor(p, "k", i)).Enqueue(ctx, fmt.Sprintf("p%d-%d", i, j), nil, time.Unix(0, 0)))
		}
	}
	m, err := p.Take(ctx) // every partition claims for it
	require.NoError(t, err)
	eventually(t, 10*time.Second, "the others released", func() bool {
		st, err := p.Stats(ctx)
		require.NoError(t, err)
		return st.InFlight == 1
	})
	require.NoError(t, m.Ack(ctx))
	// What the partitions claimed beyond what callers took is released at
	// Close.
	ms, err := p.TakeBatch(ctx, 2)
	require.NoError(t, err)
	eventually(t, 10*time.Second, "more claimed than taken", func() bool {
		st, err := p.Stats(ctx)
		require.NoError(t, err)
		return st.InFlight > int64(len(ms))
	})
	require.NoError(t, p.Close())
	st, err := p.Partition(0).Stats(ctx)
	require.ErrorIs(t, err, ErrClosed)
	_ = st
	p2 := newPartitioned(t, c, "surplus", 3)
	sum, err := p2.Stats(ctx)
	require.NoError(t, err)
	require.EqualValues(t, len(ms), sum.InFlight, "only what callers hold is in flight after Close")
	require.Zero(t, sum.Nacked+sum.Expired)
	require.NoError(t, errors.Join(p.AckMany(ctx, ms)...), "messages of a closed queue can be settled")
	for {
		ms, err := p2.TakeBatch(ctx, 10)
		require.NoError(t, err)
		for _, m := range ms {
			require.Equal(t, 1, m.Attempts, "%s: a release counts no attempt", m.ID)
		}
		require.NoError(t, errors.Join(p2.AckMany(ctx, ms)...))
		st, err := p2.Stats(ctx)
		require.NoError(t, err)
		if st.Acked == 15 {
			break
		}
	}
	auditP(t, p2)
}

// AckTake acks through the partition's combined acks and reports a lost
// lease without taking anything.
func TestPartitionedAckTake(t *testing.T) {
	s := startRedis(t, "--appendfsync", "everysec")
	c := s.client(t)
	ctx := context.Background()
	p := newPartitioned(t, c, "acktake", 2, WithVisibilityTimeout(200*time.Millisecond), WithBackoff(time.Hour, time.Hour))
	for i := range 4 {
		_, err := p.EnqueueAfter(ctx, "a"+strconv.Itoa(i), nil, 0)
		require.NoError(t, err)
	}
	m, err := p.AckTake(ctx, nil)
	require.NoError(t, err)
	untilRedisTime(t, c, m.Deadline.Add(time.Millisecond))
	_, err = p.AckTake(ctx, m)
	require.ErrorIs(t, err, ErrLeaseLost)
	m2, err := p.Take(ctx)
	require.NoError(t, err)
	m3, err := p.AckTake(ctx, m2)
	require.NoError(t, err)
	_, err = p.Get(ctx, m2.ID)
	require.ErrorIs(t, err, ErrNotFound, "acked")
	// A message of another queue is acked on its own.
	q := newQueue(t, c, "other")
	_, err = q.EnqueueAfter(ctx, "o", nil, 0)
	require.NoError(t, err)
	o, err := q.Take(ctx)
	require.NoError(t, err)
	m4, err := p.AckTake(ctx, o)
	require.NoError(t, err)
	_, err = q.Get(ctx, "o")
	require.ErrorIs(t, err, ErrNotFound)
	errs := p.AckMany(ctx, []*Message{m3, nil, o, m4})
	require.NoError(t, errs[0])
	require.ErrorContains(t, errs[1], "nil")
	require.ErrorContains(t, errs[2], "not a partition")
	require.NoError(t, errs[3])
	// After Close, AckTake acks done and reports ErrClosed.
	_, err = p.EnqueueAfter(ctx, "last", nil, 0)
	require.NoError(t, err)
	m5, err := p.Take(ctx)
	require.NoError(t, err)
	require.NoError(t, p.Close())
	_, err = p.AckTake(ctx, m5)
	require.ErrorIs(t, err, ErrClosed)
	_, err = p.Partition(0).Get(ctx, "last")
	require.ErrorIs(t, err, ErrClosed)
}

// A partition whose claims fail gives its error to one waiting caller,
// the others keep getting the other partitions' items, and it is claimed
// again after a pause.
func TestPartitionedPartitionError(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	ctx := context.Background()
	p := newPartitioned(t, c, "failing", 2, WithWakeCap(time.Second))
	bad := p.Partition(1).Name()
	var failing atomic.Bool
	c.AddHook(partFailHook{fail: func(cmd redis.Cmder) bool {
		if !failing.Load() || !strings.HasPrefix(strings.ToLower(cmd.Name()), "eval") {
			return false
		}
		for _, a := range cmd.Args() {
			if s, ok := a.(string); ok && strings.HasPrefix(s, "{dq:"+bad+"}") {
				return true
			}
		}
		return false
	}})
	failing.Store(true)
	good := partKeyFor(p, "g", 0)
	_, err := p.EnqueueAfter(ctx, good, nil, 0)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var sawErr, sawGood bool
	for !sawErr || !sawGood {
		m, err := p.Take(ctx)
		require.NotErrorIs(t, err, context.DeadlineExceeded)
		if err != nil {
			require.ErrorContains(t, err, bad)
			require.ErrorContains(t, err, "injected")
			sawErr = true
			continue
		}
		require.Equal(t, good, m.ID)
		require.NoError(t, m.Ack(ctx))
		sawGood = true
	}
	failing.Store(false)
	id := partKeyFor(p, "b", 1)
	_, err = p.EnqueueAfter(ctx, id, nil, 0)
	require.NoError(t, err)
	for {
		m, err := p.Take(ctx)
		require.NotErrorIs(t, err, context.DeadlineExceeded)
		if err != nil {
			continue // failures from before
		}
		require.Equal(t, id, m.ID)
		require.NoError(t, m.Ack(ctx))
		break
	}
}

// partFailHook fails the commands fail selects with an error reply.
type partFailHook struct{ fail func(redis.Cmder) bool }

func (partFailHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h partFailHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.fail(cmd) {
			err := replyError("ERR injected failure")
			cmd.SetErr(err)
			return err
		}
		return next(ctx, cmd)
	}
}
func (partFailHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// List pages merge the partitions in the state's order, with nothing
// skipped or repeated, forward and reverse, with payloads too; the other
// admin calls add the partitions up.
func TestPartitionedAdmin(t *testing.T) {
	s := startRedis(t, "--appendfsync", "everysec")
	c := s.client(t)
	ctx := context.Background()
	p := newPartitioned(t, c, "admin", 3, WithMaxAttempts(1))
	base := redisNow(t, c).Add(time.Hour).Truncate(time.Millisecond)
	const n = 90
	var want []string
	for i := range n {
		id := fmt.Sprintf("s%03d", i)
		want = append(want, id)
		// 40 KiB each: a partition's page with payloads ends after 1 MiB,
		// before its items do.
		require.NoError(t, p.Enqueue(ctx, id, []byte(strings.Repeat("x", 40<<10)), base.Add(time.Duration(i)*time.Millisecond)))
	}
	for _, opt := range []PartitionedListOptions{{Limit: 7}, {Limit: 7, Reverse: true}, {Limit: 1000, Payloads: true}, {}} {
		var got []string
		pages := 0
		for {
			pg, err := p.List(ctx, StateScheduled, opt)
			require.NoError(t, err)
			require.EqualValues(t, n, pg.Total)
			pages++
			for _, it := range pg.Items {
				got = append(got, it.ID)
				require.Equal(t, p.PartitionOf(it.ID), it.Partition)
				if opt.Payloads {
					require.Len(t, it.Payload, 40<<10)
				} else {
					require.Nil(t, it.Payload)
				}
			}
			if pg.Next == nil {
				break
			}
			opt.Cursor = pg.Next
		}
		w := slices.Clone(want)
		if opt.Reverse {
			slices.Reverse(w)
		}
		require.Equal(t, w, got, "%+v", opt)
		switch {
		case opt.Limit == 7:
			require.Equal(t, (n+6)/7, pages)
		case opt.Payloads:
			require.Greater(t, pages, 1, "pages end after 1 MiB of payloads")
		}
	}
	_, err := p.List(ctx, StateScheduled, PartitionedListOptions{Cursor: []int64{0}})
	require.ErrorContains(t, err, "cursor")
	_, err = p.List(ctx, State(9), PartitionedListOptions{})
	require.Error(t, err)

	h, err := p.DueHistogram(ctx, time.Hour, 2)
	require.NoError(t, err)
	require.EqualValues(t, n, h.Counts[0]+h.Counts[1])

	// Dead letters, across partitions, oldest death first. A consumer of
	// its own takes them: a process that takes keeps claiming for a while
	// after its last Take (see Take), which the counts below would see.
	for i := range 12 {
		_, err := p.EnqueueAfter(ctx, "d"+strconv.Itoa(i), nil, 0)
		require.NoError(t, err)
	}
	consumer := newPartitioned(t, c, "admin", 3, WithMaxAttempts(1))
	var died []string
	for len(died) < 12 {
		m, err := consumer.Take(ctx)
		require.NoError(t, err)
		_, err = m.DeadLetter(ctx, "test")
		require.NoError(t, err)
		died = append(died, m.ID)
		time.Sleep(2 * time.Millisecond) // distinct times of death
	}
	require.NoError(t, consumer.Close())
	dead, err := p.DeadIDs(ctx, 100)
	require.NoError(t, err)
	require.Equal(t, died, dead)
	dead, err = p.DeadIDs(ctx, 5)
	require.NoError(t, err)
	require.Equal(t, died[:5], dead)

	st, err := p.Stats(ctx)
	require.NoError(t, err)
	require.EqualValues(t, n, st.Scheduled)
	require.EqualValues(t, 12, st.Dead)
	require.EqualValues(t, n+12, st.Enqueued)
	require.EqualValues(t, 12, st.Counters["dead"])
	pst, err := p.PartitionStats(ctx)
	require.NoError(t, err)
	sum := SumStats(pst)
	require.False(t, sum.Now.Before(st.Now))
	sum.Now, st.Now = time.Time{}, time.Time{}
	require.Equal(t, st, sum)

	require.NoError(t, p.Pause(ctx))
	paused, err := p.Paused(ctx)
	require.NoError(t, err)
	require.True(t, paused)
	require.NoError(t, p.Resume(ctx))

	nr, err := p.RequeueAllDead(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 12, nr)
	nd, err := p.Purge(ctx, StateScheduled)
	require.NoError(t, err)
	require.EqualValues(t, n+12, nd)
	auditP(t, p)

	infos, err := ListPartitioned(ctx, c)
	require.NoError(t, err)
	require.Equal(t, []PartitionedInfo{{Name: "admin", Partitions: PartitionLayout("admin", 3)}}, infos)
	queues, err := ListQueues(ctx, c)
	require.NoError(t, err)
	require.Equal(t, PartitionLayout("admin", 3), queues)

	deleted, err := p.Destroy(ctx)
	require.NoError(t, err)
	require.Positive(t, deleted)
	keys, err := c.Keys(ctx, "*admin*").Result()
	require.NoError(t, err)
	require.Empty(t, keys)
	_, err = p.Destroy(ctx)
	require.ErrorIs(t, err, ErrNoQueue)
	infos, err = ListPartitioned(ctx, c)
	require.NoError(t, err)
	require.Empty(t, infos)
	// Destroyed, the name may come back with another count.
	newPartitioned(t, c, "admin", 2)
}

// On a 3-master Cluster the partitions' keys live in slots of different
// masters, and every operation works.
func TestPartitionedCluster(t *testing.T) {
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: redistest.NewCluster(t, 3)})
	defer cc.Close()
	ctx := context.Background()
	slots, err := cc.ClusterSlots(ctx).Result()
	require.NoError(t, err)
	master := func(slot int) string {
		for _, s := range slots {
			if slot >= s.Start && slot <= s.End {
				return s.Nodes[0].Addr
			}
		}
		return ""
	}
	for _, name := range []string{"orders", "emails", "q", "a~b", "jobs:high"} {
		masters := map[string]bool{}
		for _, n := range PartitionLayout(name, 3) {
			got, err := cc.ClusterKeySlot(ctx, "{dq:"+n+"}:sched").Result()
			require.NoError(t, err)
			require.EqualValues(t, keySlot("dq:"+n), got, n)
			masters[master(int(got))] = true
		}
		require.Len(t, masters, 3, "%s's partitions land on every master", name)
	}

	p := newPartitioned(t, cc, "orders", 3, WithVisibilityTimeout(time.Minute))
	for i := range 3 {
		_, err := p.Partition(i).EnqueueAfter(ctx, "probe", nil, time.Hour)
		require.NoError(t, err)
	}
	const n = 300
	items := make([]EnqueueItem, n)
	for i := range items {
		items[i] = EnqueueItem{ID: "o" + strconv.Itoa(i), Payload: []byte{byte(i)}}
	}
	res, err := p.EnqueueMany(ctx, items)
	require.NoError(t, err)
	for _, r := range res {
		require.NoError(t, r.Err)
	}
	_, err = p.Cancel(ctx, "o0")
	require.NoError(t, err)
	require.NoError(t, p.Reschedule(ctx, "o1", time.Now().Add(time.Hour)))
	sr, err := p.Schedule(ctx, "o2", []byte("new"), time.Unix(0, 0))
	require.NoError(t, err)
	require.False(t, sr.Created)
	got := 0
	for got < n-2 {
		ms, err := p.TakeBatch(ctx, 50)
		require.NoError(t, err)
		got += len(ms)
		require.NoError(t, errors.Join(p.AckMany(ctx, ms)...))
	}
	st, err := p.Stats(ctx)
	require.NoError(t, err)
	require.EqualValues(t, n-2, st.Acked)
	require.EqualValues(t, 4, st.Scheduled) // o1 and the probes
	for i := range 3 {
		ps, err := p.Partition(i).Stats(ctx)
		require.NoError(t, err)
		require.Positive(t, ps.Acked, "partition %d took part", i)
	}
	pg, err := p.List(ctx, StateScheduled, PartitionedListOptions{})
	require.NoError(t, err)
	require.Len(t, pg.Items, 4)
	auditP(t, p)
	infos, err := ListPartitioned(ctx, cc)
	require.NoError(t, err)
	require.Len(t, infos, 1)
	_, err = p.Destroy(ctx)
	require.NoError(t, err)
	require.NoError(t, cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		ks, err := c.Keys(ctx, "*orders*").Result()
		if len(ks) > 0 {
			return fmt.Errorf("left on %s: %v", c.Options().Addr, ks)
		}
		return err
	}))
}

// New refuses the name of a partitioned queue: its items are in its
// partitions, and an ordinary queue of that name would be another queue.
func TestNewRefusesAPartitionedQueue(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	ctx := context.Background()
	p, err := NewPartitioned(ctx, c, "pq", 3)
	require.NoError(t, err)
	defer p.Close()
	_, err = New(ctx, c, "pq")
	require.ErrorContains(t, err, `"pq" is a partitioned queue`)
	q, err := New(ctx, c, "pq2")
	require.NoError(t, err)
	require.NoError(t, q.Close())
}
