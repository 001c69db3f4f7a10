package delayqueue_test

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	dq "github.com/dq-go/delayqueue"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func schedule[K comparable, V any](t testing.TB, k *dq.Keyed[K, V], key K, v V, at time.Time) bool {
	t.Helper()
	replaced, err := k.Schedule(key, v, at)
	require.NoError(t, err)
	return replaced
}

// Schedule upserts, Add dedupes; both keep one item per key.
func TestKeyedScheduleUpsertsAddDedupes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k := dq.NewKeyed[string, int]()
		now := time.Now()
		assert.False(t, schedule(t, k, "a", 1, now.Add(time.Hour)))
		assert.True(t, schedule(t, k, "a", 2, now.Add(time.Minute)), "replaced")
		added, err := k.Add("a", 3, now)
		require.NoError(t, err)
		assert.False(t, added, "Add keeps the queued item")
		added, err = k.Add("b", 4, now.Add(time.Second))
		require.NoError(t, err)
		assert.True(t, added)
		assert.Equal(t, 2, k.Len())

		v, at, ok := k.Get("a")
		require.True(t, ok)
		assert.Equal(t, 2, v)
		assert.True(t, at.Equal(now.Add(time.Minute)))
		s := k.Stats()
		assert.Equal(t, uint64(2), s.Offered)
		assert.Equal(t, uint64(1), s.Rescheduled, "the replacement")

		time.Sleep(time.Hour)
		var got []string
		for key, v := range k.Consume(t.Context()) {
			got = append(got, key)
			assert.Equal(t, map[string]int{"a": 2, "b": 4}[key], v)
			if len(got) == 2 {
				break
			}
		}
		assert.Equal(t, []string{"b", "a"}, got)
	})
}

// Once Take hands out a key, the key is gone: Cancel, Reschedule, Deadline
// report it absent and Schedule inserts it anew.
func TestKeyedTakenKeyIsGone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k := dq.NewKeyed[int, string]()
		res := make(chan int, 1)
		go func() {
			key, _, err := k.Take(t.Context())
			assert.NoError(t, err)
			res <- key
		}()
		synctest.Wait()
		schedule(t, k, 7, "x", time.Now().Add(time.Second))
		assert.Equal(t, 7, <-res)
		_, ok := k.Cancel(7)
		assert.False(t, ok)
		assert.False(t, k.Reschedule(7, time.Now()))
		_, ok = k.Deadline(7)
		assert.False(t, ok)
		assert.False(t, k.Contains(7))
		assert.False(t, schedule(t, k, 7, "y", time.Now()), "inserted anew, not replaced")
		assert.Zero(t, k.Stats().Rescheduled)
	})
}

// Equal deadlines leave in schedule order, a replacement or Reschedule
// counting as newly scheduled.
func TestKeyedTiesInScheduleOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k := dq.NewKeyed[string, int]()
		at := time.Now()
		for _, key := range []string{"a", "b", "c", "d"} {
			schedule(t, k, key, 0, at)
		}
		schedule(t, k, "a", 1, at)
		require.True(t, k.Reschedule("b", at))
		got := k.DrainExpired(nil, 0)
		var keys []string
		for _, it := range got {
			keys = append(keys, it.Key)
		}
		assert.Equal(t, []string{"c", "d", "a", "b"}, keys)
		assert.Equal(t, 1, got[2].Value)
	})
}

// On a bounded queue, replacing never fails with ErrFull, inserting does;
// Put blocks for room and replaces without waiting.
func TestKeyedBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k := dq.NewKeyed[string, int](dq.WithCapacity(2))
		now := time.Now()
		schedule(t, k, "a", 1, now.Add(time.Hour))
		schedule(t, k, "b", 2, now.Add(time.Hour))
		assert.True(t, schedule(t, k, "a", 3, now.Add(time.Minute)), "replacing on a full queue")
		_, err := k.Schedule("c", 4, now)
		assert.ErrorIs(t, err, dq.ErrFull)
		added, err := k.Add("c", 4, now)
		assert.ErrorIs(t, err, dq.ErrFull)
		assert.False(t, added)

		replaced, err := k.Put(t.Context(), "b", 5, now.Add(time.Minute))
		require.NoError(t, err)
		assert.True(t, replaced, "Put replaces without waiting for room")

		type putRes struct {
			replaced bool
			err      error
		}
		pc := make(chan putRes, 1)
		go func() {
			r, err := k.Put(t.Context(), "c", 6, now)
			pc <- putRes{r, err}
		}()
		synctest.Wait()
		assert.Equal(t, 1, k.Stats().BlockedPuts)
		_, ok := k.Cancel("a")
		require.True(t, ok)
		r := <-pc
		require.NoError(t, r.err)
		assert.False(t, r.replaced)
		assert.True(t, k.Contains("c"))

		// A Put waiting for room whose key gets inserted meanwhile replaces it.
		go func() {
			r, err := k.Put(t.Context(), "d", 7, now)
			pc <- putRes{r, err}
		}()
		synctest.Wait()
		// The cancel wakes the Put, but "d" takes the room before the Put
		// runs again (under the same lock: with two calls, the woken Put
		// could run first and insert "d" itself).
		replaced, err = dq.KeyedCancelThenSchedule(k, "b", "d", 8, now.Add(time.Hour))
		require.NoError(t, err)
		require.False(t, replaced)
		r = <-pc
		require.NoError(t, r.err)
		assert.True(t, r.replaced)
		v, at, _ := k.Get("d")
		assert.Equal(t, 7, v)
		assert.True(t, at.Equal(now))

		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err = k.Put(ctx, "e", 0, now)
		assert.ErrorIs(t, err, context.Canceled)
	})
}

func TestKeyedClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k := dq.NewKeyed[string, int]()
		schedule(t, k, "a", 1, time.Now().Add(time.Hour))
		k.Close()
		_, err := k.Schedule("a", 2, time.Now())
		assert.ErrorIs(t, err, dq.ErrClosed, "no replacement after Close")
		_, err = k.Add("b", 2, time.Now())
		assert.ErrorIs(t, err, dq.ErrClosed)
		_, err = k.ScheduleAfter("b", 2, time.Second)
		assert.ErrorIs(t, err, dq.ErrClosed)
		_, err = k.Put(t.Context(), "b", 2, time.Now())
		assert.ErrorIs(t, err, dq.ErrClosed)
		_, _, err = k.Take(t.Context())
		assert.ErrorIs(t, err, dq.ErrClosed)
		_, err = k.TakeBatch(t.Context(), nil, 0)
		assert.ErrorIs(t, err, dq.ErrClosed)
		key, v, at, ok := k.Peek()
		assert.True(t, ok)
		assert.Equal(t, "a", key)
		assert.Equal(t, 1, v)
		assert.True(t, at.After(time.Now()))
		assert.Equal(t, []dq.Item[string, int]{{Key: "a", Value: 1}}, k.Drain())
		_, _, _, ok = k.Peek()
		assert.False(t, ok)
		assert.Zero(t, dq.KeyedIndexLen(k))
	})
}

func TestKeyedZeroValuePanics(t *testing.T) {
	var k dq.Keyed[int, int]
	assert.PanicsWithValue(t, "delayqueue: Keyed used without NewKeyed", func() { k.Len() })
	assert.PanicsWithValue(t, "delayqueue: Keyed used without NewKeyed", func() { _, _ = k.Schedule(1, 1, time.Now()) })
}

// Keyed upsert and take allocate nothing in steady state.
func TestKeyedSteadyStateAllocatesNothing(t *testing.T) {
	k := dq.NewKeyed[int, int]()
	past, far := time.Now().Add(-time.Second), time.Now().Add(time.Hour)
	for i := range 64 {
		schedule(t, k, i, i, far)
	}
	ctx := context.Background()
	i := 0
	allocs := testing.AllocsPerRun(1000, func() {
		key := i % 64
		i++
		if _, err := k.Schedule(key, i, past); err != nil { // replace: due now
			panic(err)
		}
		got, _, err := k.Take(ctx)
		if err != nil || got != key {
			panic("take")
		}
		if _, err := k.Schedule(key, i, far); err != nil { // insert again
			panic(err)
		}
		k.Reschedule(key, far.Add(time.Second))
	})
	assert.Zero(t, allocs)
	assert.Equal(t, 64, k.Len())
}

// Real clock, -race: producers upsert and cancel random keys while
// consumers take; every inserted item leaves exactly once and the index
// holds exactly the queued keys at the end.
func TestKeyedStressExactlyOnce(t *testing.T) {
	k := dq.NewKeyed[int, int64](dq.WithCapacity(64))
	const producers, perProducer, keys = 4, 2000, 100
	var next atomic.Int64
	var left sync.Map // value -> how it left
	var inserted atomic.Int64
	note := func(v int64, how string) {
		if prev, dup := left.LoadOrStore(v, how); dup {
			t.Errorf("value %d left twice: %v and %s", v, prev, how)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var prodWG, consWG sync.WaitGroup
	for p := range producers {
		prodWG.Go(func() {
			r := rand.New(rand.NewPCG(uint64(p), 1))
			for range perProducer {
				key := r.IntN(keys)
				d := time.Duration(r.IntN(500)) * time.Microsecond
				switch r.IntN(4) {
				case 0:
					if v, ok := k.Cancel(key); ok {
						note(v, "cancel")
					}
				default:
					v := next.Add(1)
					replaced, err := k.Put(context.Background(), key, v, time.Now().Add(d))
					if err != nil {
						t.Error(err)
						return
					}
					if !replaced {
						inserted.Add(1)
					}
				}
			}
		})
	}
	for range 3 {
		consWG.Go(func() {
			buf := make([]dq.Item[int, int64], 0, 8)
			for {
				var err error
				buf, err = k.TakeBatch(ctx, buf[:0], 8)
				if err != nil {
					return
				}
				for _, it := range buf {
					note(it.Value, "take")
				}
			}
		})
	}
	prodWG.Wait()
	for k.Len() > 0 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	consWG.Wait()
	require.NoError(t, dq.CheckKeyed(k))
	assert.Zero(t, dq.KeyedIndexLen(k))
	s := k.Stats()
	assert.Equal(t, uint64(inserted.Load()), s.Offered)
	assert.Equal(t, s.Offered, s.Taken+s.Removed+s.Drained+uint64(s.Len))
	n := 0
	left.Range(func(any, any) bool { n++; return true })
	assert.Equal(t, int(s.Taken+s.Removed), n, "every item that left was seen once")
}

// requireKeyPanic fails unless f panics with a "delayqueue:" message.
func requireKeyPanic(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		msg, _ := recover().(string)
		if !strings.HasPrefix(msg, "delayqueue: Keyed key") {
			t.Errorf("%s: panic %q, want a delayqueue: message about the key", what, msg)
		}
	}()
	f()
}

// Regression (found in review): a NaN key is never equal to itself, so
// every Schedule inserted it anew and its index entries could never be
// deleted: the index outgrew the queue for good. With K = any, a key of an
// uncomparable type (a slice) panicked in the map while the queue's mutex
// was held, leaving the queue locked for ever. Both now panic with a
// delayqueue: message before the lock is taken, and the queue goes on.
func TestKeyedRejectsKeysUnequalToThemselves(t *testing.T) {
	past := time.Now().Add(-time.Second)
	f := dq.NewKeyed[float64, int]()
	defer f.Close()
	requireKeyPanic(t, "Schedule(NaN)", func() { f.Schedule(math.NaN(), 1, past) })
	requireKeyPanic(t, "Add(NaN)", func() { f.Add(math.NaN(), 1, past) })
	requireKeyPanic(t, "Cancel(NaN)", func() { f.Cancel(math.NaN()) })
	_, err := f.Schedule(1.5, 1, past) // ordinary floats work
	require.NoError(t, err)
	assert.Equal(t, 1, dq.KeyedIndexLen(f))
	assert.NoError(t, dq.CheckKeyed(f))

	type pair struct {
		Name string
		W    float64
	}
	s := dq.NewKeyed[pair, int]()
	defer s.Close()
	requireKeyPanic(t, "Schedule(struct with NaN)", func() { s.Schedule(pair{"a", math.NaN()}, 1, past) })

	a := dq.NewKeyed[any, int]()
	defer a.Close()
	requireKeyPanic(t, "Schedule([]int)", func() { a.Schedule([]int{1}, 1, past) })
	requireKeyPanic(t, "Put(map)", func() { a.Put(t.Context(), map[string]int{}, 1, past) })
	requireKeyPanic(t, "Schedule(any(NaN))", func() { a.Schedule(math.NaN(), 1, past) })
	requireKeyPanic(t, "Get([]int)", func() { a.Get([]int{1}) })
	_, err = a.Schedule("ok", 2, past) // the queue is not locked
	require.NoError(t, err)
	k, v, ok := a.Poll()
	assert.True(t, ok)
	assert.Equal(t, "ok", k)
	assert.Equal(t, 2, v)
	assert.Zero(t, dq.KeyedIndexLen(a))
}

// Regression (found in review): a Put blocked for room was woken only when
// room appeared, so a Put whose key another Put (or a Schedule) inserted
// meanwhile stayed blocked although a replacement needs no room. Inserting a
// key now wakes the Puts blocked for it: both Puts of "b" return, one
// inserting and one replacing.
func TestKeyedPutWokenWhenItsKeyIsInserted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k := dq.NewKeyed[string, int](dq.WithCapacity(1))
		defer k.Close()
		far := time.Now().Add(time.Hour)
		_, err := k.Schedule("a", 0, far)
		require.NoError(t, err)
		replaced := make(chan bool, 3)
		put := func(key string, v int) {
			r, err := k.Put(t.Context(), key, v, far)
			assert.NoError(t, err)
			replaced <- r
		}
		go put("b", 1)
		synctest.Wait()
		go put("b", 2)
		synctest.Wait()
		go put("c", 3) // blocked for another key: stays blocked
		synctest.Wait()
		require.Equal(t, 3, k.Stats().BlockedPuts)

		k.Cancel("a") // room for one insert
		synctest.Wait()
		require.Len(t, replaced, 2, "both Puts of b return")
		assert.ElementsMatch(t, []bool{false, true}, []bool{<-replaced, <-replaced}, "one inserts b, one replaces it")
		assert.Equal(t, 1, k.Stats().BlockedPuts, "the Put of c still waits for room")
		assert.Equal(t, 1, k.Len())

		k.Cancel("b")
		synctest.Wait()
		assert.False(t, <-replaced, "c is inserted once there is room")
		assert.True(t, k.Contains("c"))
	})
}
