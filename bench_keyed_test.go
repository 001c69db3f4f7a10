package delayqueue_test

// Keyed against what users write today: a Queue plus their own
// map[K]Handle under their own mutex, kept in step with the queue by hand.
//
//	go test -run '^$' -bench 'BenchmarkKeyed' -count 6 -benchmem . > /tmp/keyed.txt
//	benchstat -col /impl /tmp/keyed.txt
//
// op=upsertpoll: Schedule a random key of a universe of 2n keys (about half
// replace a queued key, half insert a new one) with a due deadline, and,
// when it inserted, take one due item, so the queue holds about n keys.
// op=reschedule: move a random queued key to a random future deadline.
//
// impl=keyed is Keyed; impl=mapmutex is Queue + map[int]Handle under a
// sync.Mutex (replace = Remove + Offer, take = Poll + delete, both under
// the mutex so that the map and the queue agree for every caller).
// client-go's delaying workqueue is not here: its module graph (client-go,
// apimachinery, klog, utils and their go.sum) is far heavier than a
// benchmark baseline is worth.

import (
	"sync"
	"testing"
	"time"

	"github.com/dq-go/delayqueue"
)

type benchKV struct {
	key int
	v   int64
}

// benchMapQueue is the hand-kept version.
type benchMapQueue struct {
	mu sync.Mutex
	q  *delayqueue.Queue[benchKV]
	m  map[int]delayqueue.Handle
}

func (s *benchMapQueue) Schedule(key int, v int64, at time.Time) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, replaced := s.m[key]
	if replaced {
		s.q.Remove(h)
	}
	h, err := s.q.Offer(benchKV{key, v}, at)
	if err != nil {
		return false, err
	}
	s.m[key] = h
	return replaced, nil
}

func (s *benchMapQueue) Poll() (int, int64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	it, ok := s.q.Poll()
	if ok {
		delete(s.m, it.key)
	}
	return it.key, it.v, ok
}

func (s *benchMapQueue) Reschedule(key int, at time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.m[key]
	return ok && s.q.Reschedule(h, at)
}

// benchKeyedImpl is what the benchmarks need of either implementation.
type benchKeyedImpl interface {
	Schedule(key int, v int64, at time.Time) (bool, error)
	Poll() (int, int64, bool)
	Reschedule(key int, at time.Time) bool
}

func BenchmarkKeyed(b *testing.B) {
	impls := []struct {
		name string
		mk   func() benchKeyedImpl
	}{
		{"keyed", func() benchKeyedImpl { return delayqueue.NewKeyed[int, int64]() }},
		{"mapmutex", func() benchKeyedImpl {
			return &benchMapQueue{q: delayqueue.New[benchKV](), m: map[int]delayqueue.Handle{}}
		}},
	}
	for _, sz := range benchSizes[:2] {
		n := sz.n
		b.Run("n="+sz.name, func(b *testing.B) {
			for _, impl := range impls {
				b.Run("impl="+impl.name, func(b *testing.B) { benchKeyedOps(b, n, impl.mk) })
			}
		})
	}
}

func benchKeyedOps(b *testing.B, n int, mk func() benchKeyedImpl) {
	b.Run("op=upsertpoll", func(b *testing.B) {
		q, t0, hold, r := mk(), benchPast(), newBenchHold(n, 1), benchRand{s: 3}
		for i := range n {
			if _, err := q.Schedule(2*i, 0, t0.Add(time.Duration(hold.next()))); err != nil {
				b.Fatal(err)
			}
		}
		benchSettle()
		b.ReportAllocs()
		v := int64(0)
		benchCPU(b)
		for b.Loop() {
			replaced, err := q.Schedule(r.intn(2*n), v, t0.Add(time.Duration(hold.next())))
			if err != nil {
				b.Fatal(err)
			}
			if !replaced {
				if _, _, ok := q.Poll(); !ok {
					b.Fatal("Poll found nothing due")
				}
			}
			v++
		}
	})
	b.Run("op=reschedule", func(b *testing.B) {
		q, tp, r := mk(), benchFuture(), benchRand{s: 4}
		span := n * benchStep
		for i := range n {
			if _, err := q.Schedule(i, 0, tp.Add(time.Duration(r.intn(span)))); err != nil {
				b.Fatal(err)
			}
		}
		benchSettle()
		b.ReportAllocs()
		benchCPU(b)
		for b.Loop() {
			if !q.Reschedule(r.intn(n), tp.Add(time.Duration(r.intn(span)))) {
				b.Fatal("Reschedule: key not queued")
			}
		}
	})
}
