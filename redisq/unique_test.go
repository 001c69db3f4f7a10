package redisq

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dq-go/delayqueue/redisq/redistest"
	"github.com/stretchr/testify/require"
)

// A unique key's window: the first enqueue takes it and is stored; another
// item of the key is refused with ErrUniqueHeld (an ErrDuplicate) and
// nothing is stored, while it waits, after it ran and completed, until an
// operator releases the window. Other keys are not affected, and the item
// carries its key and window.
func TestUniqueWindowHoldsAfterCompletion(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "uniq", WithVisibilityTimeout(time.Hour))
	ctx := context.Background()
	add := func(id, key string) error {
		_, err := q.Add(ctx, EnqueueItem{ID: id, Payload: []byte(id), At: time.Unix(1, 0), Job: jobOf([]JobOption{Unique(key, time.Hour)})})
		return err
	}
	before := redisNow(t, c)
	require.NoError(t, add("a", "order:1"))
	err := add("b", "order:1")
	require.ErrorIs(t, err, ErrUniqueHeld)
	require.ErrorIs(t, err, ErrDuplicate)
	_, err = q.Get(ctx, "b")
	require.ErrorIs(t, err, ErrNotFound, "a refused item is not stored")
	w, err := q.UniqueWindow(ctx, "order:1")
	require.NoError(t, err)
	require.Equal(t, "a", w.ID)
	// Redis keeps expiry times in whole ms.
	require.False(t, w.Until.Before(before.Truncate(time.Millisecond).Add(time.Hour-time.Millisecond)), "window ends %v, before enqueue + 1h", w.Until)
	require.False(t, w.Until.After(redisNow(t, c).Add(time.Hour+time.Millisecond)), "window ends %v, after now + 1h", w.Until)

	require.NoError(t, add("c", "order:2"), "another key")
	m, err := q.Take(ctx)
	require.NoError(t, err)
	require.Equal(t, "a", m.ID)
	require.Equal(t, "order:1", m.Job.UniqueKey)
	require.Equal(t, time.Hour, m.Job.UniqueFor)
	require.NoError(t, m.Ack(ctx))
	require.ErrorIs(t, add("d", "order:1"), ErrUniqueHeld, "after the item completed and is gone")
	_, err = q.Cancel(ctx, "c")
	require.NoError(t, err)
	require.ErrorIs(t, add("e", "order:2"), ErrUniqueHeld, "after the item was cancelled")

	ok, err := q.ReleaseUnique(ctx, "order:1")
	require.NoError(t, err)
	require.True(t, ok)
	_, err = q.UniqueWindow(ctx, "order:1")
	require.ErrorIs(t, err, ErrNotFound)
	require.NoError(t, add("f", "order:1"), "after ReleaseUnique")
	ok, err = q.ReleaseUnique(ctx, "nothing")
	require.NoError(t, err)
	require.False(t, ok)
	audit(t, q)
}

// The window ends by the Redis clock UniqueFor after the enqueue that took
// it, not before: the next item of the key is stored then.
func TestUniqueWindowEnds(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "uniq-ends")
	ctx := context.Background()
	item := func(id string) EnqueueItem {
		return EnqueueItem{ID: id, Job: Job{UniqueKey: "k", UniqueFor: 100 * time.Millisecond}}
	}
	first, err := q.Add(ctx, item("a"))
	require.NoError(t, err)
	var next time.Time
	for i := 0; ; i++ {
		next, err = q.Add(ctx, item("b"+strconv.Itoa(i)))
		if err == nil {
			break
		}
		require.ErrorIs(t, err, ErrUniqueHeld)
		require.Less(t, i, 10000, "the window never ended")
		time.Sleep(time.Millisecond)
	}
	// Each due time is the enqueue's Redis TIME rounded up to the ms.
	require.GreaterOrEqual(t, next.Sub(first), 99*time.Millisecond, "stored before the window ended")
}

// EnqueueMany and combined Enqueue calls take windows in order: the first
// item of a key wins, a later one of the call is ErrUniqueHeld, and an item
// refused as a duplicate id takes no window.
func TestUniqueWindowInBatches(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "uniq-many")
	ctx := context.Background()
	at := time.Unix(1, 0)
	u := func(key string) Job { return Job{UniqueKey: key, UniqueFor: time.Hour} }
	res, err := q.EnqueueMany(ctx, []EnqueueItem{
		{ID: "a", At: at, Job: u("k")},
		{ID: "b", At: at, Job: u("k")},
		{ID: "c", At: at, Job: u("j")},
		{ID: "a", At: at, Job: u("z")},
		{ID: "d", At: at},
	})
	require.NoError(t, err)
	require.NoError(t, res[0].Err)
	require.ErrorIs(t, res[1].Err, ErrUniqueHeld)
	require.NoError(t, res[2].Err)
	require.ErrorIs(t, res[3].Err, ErrDuplicate)
	require.NotErrorIs(t, res[3].Err, ErrUniqueHeld)
	require.NoError(t, res[4].Err)
	_, err = q.UniqueWindow(ctx, "z")
	require.ErrorIs(t, err, ErrNotFound, "a duplicate id took a window")

	// Concurrent calls, combined into round trips: one of each key wins.
	const n = 40
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			_, errs[i] = q.Add(ctx, EnqueueItem{ID: fmt.Sprintf("p%d", i), At: at, Job: u(fmt.Sprintf("key%d", i%4))})
		})
	}
	wg.Wait()
	won := map[string]int{}
	for i, err := range errs {
		if err == nil {
			won[fmt.Sprintf("key%d", i%4)]++
		} else {
			require.ErrorIs(t, err, ErrUniqueHeld)
		}
	}
	require.Equal(t, map[string]int{"key0": 1, "key1": 1, "key2": 1, "key3": 1}, won)
	st, err := q.Stats(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 3+4, st.Scheduled)
	audit(t, q)
}

// Processes that enqueue the same keys at once store one item per key.
func TestUniqueWindowAcrossProcesses(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	const procs, n = 4, 200
	start := strconv.FormatInt(time.Now().Add(time.Second).UnixNano(), 10)
	outs := make([][]string, procs)
	var wg sync.WaitGroup
	for p := range procs {
		_, sc := helperProcess(t, "unique", "REDISQ_ADDR="+s.addr(), "REDISQ_QUEUE=uniq-procs",
			"REDISQ_N="+strconv.Itoa(n), "REDISQ_ME=p"+strconv.Itoa(p), "REDISQ_START="+start, "REDISQ_VIS=1m")
		wg.Go(func() {
			for sc.Scan() {
				outs[p] = append(outs[p], sc.Text())
			}
		})
	}
	wg.Wait()
	stored := map[string]int{}
	for p, lines := range outs {
		require.NotEmpty(t, lines, "process %d printed nothing", p)
		require.Equal(t, "DONE", lines[len(lines)-1], "process %d: %v", p, lines)
		for _, l := range lines[:len(lines)-1] {
			i, ok := strings.CutPrefix(l, "STORED ")
			require.True(t, ok, "process %d: %q", p, l)
			stored[i]++
		}
	}
	require.Len(t, stored, n)
	for i, k := range stored {
		require.Equal(t, 1, k, "key k%s stored %d times", i, k)
	}
	q := newQueue(t, c, "uniq-procs")
	st, err := q.Stats(context.Background())
	require.NoError(t, err)
	require.EqualValues(t, n, st.Scheduled)
}

// Unique is refused where a window cannot be kept, and a malformed one
// wherever it is given; nothing is sent.
func TestUniqueRefused(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "uniq-refused")
	ctx := context.Background()
	ok := Job{UniqueKey: "k", UniqueFor: time.Minute}
	_, err := q.ScheduleItem(ctx, EnqueueItem{ID: "a", Job: ok})
	require.ErrorContains(t, err, "Schedule does not take Unique")
	_, err = q.Register(ctx, "every", Every(time.Minute), nil, RegisterJob(ok))
	require.ErrorContains(t, err, "does not take Unique")
	p := newPartitioned(t, c, "uniq-parts", 2)
	_, err = p.ScheduleItem(ctx, EnqueueItem{ID: "a", Job: ok})
	require.ErrorContains(t, err, "Schedule does not take Unique")
	_, err = p.Register(ctx, "every", Every(time.Minute), nil, RegisterJob(ok))
	require.ErrorContains(t, err, "does not take Unique")
	for _, bad := range []Job{
		{UniqueKey: "", UniqueFor: time.Minute},
		{UniqueKey: "k"},
		{UniqueKey: "k", UniqueFor: -time.Second},
		{UniqueKey: "k", UniqueFor: MaxUniqueFor + 1},
		{UniqueKey: strings.Repeat("x", MaxUniqueKeyLen+1), UniqueFor: time.Minute},
	} {
		_, err := q.Add(ctx, EnqueueItem{ID: "a", Job: bad})
		require.Error(t, err, "%+v", bad)
		require.True(t, strings.HasPrefix(err.Error(), "redisq: "), err.Error())
	}
	_, err = q.UniqueWindow(ctx, "")
	require.Error(t, err)
	st, err := q.Stats(ctx)
	require.NoError(t, err)
	require.Zero(t, st.Scheduled)
}

// On a Cluster a window lives in its queue's slot and moves with it: it
// still holds after the slot moved to another master, through Add and
// EnqueueMany, and UniqueWindow and ReleaseUnique find it there.
func TestClusterUniqueWindows(t *testing.T) {
	noLeaks(t)
	c := redistest.NewClusterWith(t, redistest.ClusterOptions{Masters: 3})
	cc := clusterClient(t, c)
	ctx := context.Background()
	q := newQueue(t, cc, "cuniq")
	u := Job{UniqueKey: "tenant:7", UniqueFor: time.Hour}
	_, err := q.Add(ctx, EnqueueItem{ID: "a", Job: u})
	require.NoError(t, err)
	src, err := c.MasterOf(ctx, q.db.Keys.Sched)
	require.NoError(t, err)
	for _, s := range c.Servers[:3] {
		if s != src {
			migrateSlot(t, c, q.db.Keys.Sched, s)
			break
		}
	}
	_, err = q.Add(ctx, EnqueueItem{ID: "b", Job: u})
	require.ErrorIs(t, err, ErrUniqueHeld, "after the slot moved")
	res, err := q.EnqueueMany(ctx, []EnqueueItem{{ID: "c", Job: u}, {ID: "d", Job: Job{UniqueKey: "tenant:8", UniqueFor: time.Hour}}})
	require.NoError(t, err)
	require.ErrorIs(t, res[0].Err, ErrUniqueHeld)
	require.NoError(t, res[1].Err)
	w, err := q.UniqueWindow(ctx, "tenant:7")
	require.NoError(t, err)
	require.Equal(t, "a", w.ID)
	ok, err := q.ReleaseUnique(ctx, "tenant:7")
	require.NoError(t, err)
	require.True(t, ok)
	_, err = q.Add(ctx, EnqueueItem{ID: "e", Job: u})
	require.NoError(t, err)
	audit(t, q)
}

// Debounce: the last enqueue of a key within its window wins. A waiting
// holder is replaced (even by its own id, with a new payload); a delivered
// one is not, and the next item is stored beside it; once the window has
// passed, nothing is replaced. A unique enqueue is refused while a
// debounced one holds the window.
func TestDebounceLastWins(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "debounce", WithVisibilityTimeout(time.Hour))
	ctx := context.Background()
	add := func(id, payload, key string, window time.Duration, after time.Duration) error {
		_, err := q.Add(ctx, EnqueueItem{ID: id, Payload: []byte(payload), After: after, Job: jobOf([]JobOption{Debounce(key, window)})})
		return err
	}
	ids := func() []string {
		var out []string
		for _, st := range []State{StateScheduled, StateInFlight} {
			p, err := q.List(ctx, st, ListOptions{})
			require.NoError(t, err)
			for _, it := range p.Items {
				out = append(out, it.ID)
			}
		}
		return out
	}
	require.NoError(t, add("a", "1", "k", time.Hour, time.Hour))
	require.NoError(t, add("b", "2", "k", time.Hour, time.Hour))
	require.Equal(t, []string{"b"}, ids(), "b replaced a")
	require.NoError(t, add("b", "3", "k", time.Hour, time.Hour))
	it, err := q.Get(ctx, "b")
	require.NoError(t, err)
	require.Equal(t, "3", string(it.Payload), "b replaced by itself")
	require.True(t, it.Job.Debounce)
	_, err = q.Add(ctx, EnqueueItem{ID: "u", Job: Job{UniqueKey: "k", UniqueFor: time.Hour}})
	require.ErrorIs(t, err, ErrUniqueHeld, "a unique enqueue while a debounced one holds the window")
	require.NoError(t, add("z", "x", "other", time.Hour, time.Hour))
	require.ErrorIs(t, add("z", "y", "k", time.Hour, time.Hour), ErrDuplicate, "an existing id that is not the holder")
	it, err = q.Get(ctx, "b")
	require.NoError(t, err, "a refused debounced enqueue replaced nothing")
	w, err := q.UniqueWindow(ctx, "k")
	require.NoError(t, err)
	require.Equal(t, "b", w.ID)

	// Delivered: not replaced.
	require.NoError(t, add("d", "", "due", time.Hour, 0))
	m, err := q.Take(ctx)
	require.NoError(t, err)
	require.Equal(t, "d", m.ID)
	require.NoError(t, add("e", "", "due", time.Hour, time.Hour))
	require.ElementsMatch(t, []string{"b", "z", "e", "d"}, ids())

	// Past the window: not replaced.
	require.NoError(t, add("f", "", "short", 50*time.Millisecond, time.Hour))
	eventually(t, 10*time.Second, "the window passes", func() bool {
		_, err := q.UniqueWindow(ctx, "short")
		return errors.Is(err, ErrNotFound)
	})
	require.NoError(t, add("g", "", "short", 50*time.Millisecond, time.Hour))
	require.ElementsMatch(t, []string{"b", "z", "e", "d", "f", "g"}, ids())
	audit(t, q)
}

// Debounced items of one EnqueueMany, and concurrent debounced Enqueue
// calls combined into round trips, apply as if one after the other: one
// item per key is left, the last, and every call reports success.
func TestDebounceInBatches(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "debounce-many")
	ctx := context.Background()
	at := time.Now().Add(time.Hour)
	d := func(key string) Job { return Job{UniqueKey: key, UniqueFor: time.Hour, Debounce: true} }
	_, err := q.Add(ctx, EnqueueItem{ID: "h0", At: at, Job: d("k")})
	require.NoError(t, err)
	res, err := q.EnqueueMany(ctx, []EnqueueItem{
		{ID: "n1", At: at, Job: d("k")},                           // replaces h0 (in Redis)
		{ID: "h0", At: at},                                        // h0 is gone: stored again
		{ID: "n2", At: at, Job: d("k")},                           // replaces n1 (of this call)
		{ID: "n1", At: at, Job: d("j")},                           // n1 is gone: stored, under j
		{ID: "n3", At: at, Job: d("k")},                           // replaces n2
		{ID: "h0", At: at, Job: d("k")},                           // an existing id, not the holder
		{ID: "n3", At: at, Payload: []byte("again"), Job: d("k")}, // replaces itself
	})
	require.NoError(t, err)
	for i, r := range res {
		if i == 5 {
			require.ErrorIs(t, r.Err, ErrDuplicate)
			continue
		}
		require.NoError(t, r.Err, "item %d", i)
	}
	p, err := q.List(ctx, StateScheduled, ListOptions{Payloads: true})
	require.NoError(t, err)
	got := map[string]string{}
	for _, it := range p.Items {
		got[it.ID] = string(it.Payload)
	}
	require.Equal(t, map[string]string{"h0": "", "n1": "", "n3": "again"}, got)
	w, err := q.UniqueWindow(ctx, "k")
	require.NoError(t, err)
	require.Equal(t, "n3", w.ID)

	const n = 40
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			_, errs[i] = q.Add(ctx, EnqueueItem{ID: fmt.Sprintf("c%d", i), At: at, Job: d(fmt.Sprintf("ck%d", i%4))})
		})
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	left := map[string]bool{}
	p, err = q.List(ctx, StateScheduled, ListOptions{})
	require.NoError(t, err)
	for _, it := range p.Items {
		left[it.ID] = true
	}
	for k := range 4 {
		w, err := q.UniqueWindow(ctx, fmt.Sprintf("ck%d", k))
		require.NoError(t, err)
		require.True(t, left[w.ID], "the holder of ck%d, %s, is not scheduled", k, w.ID)
	}
	require.Len(t, left, 3+4, "one item per key: %v", left)
	audit(t, q)
}
