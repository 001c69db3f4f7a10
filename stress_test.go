package delayqueue_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dq "github.com/dq-go/delayqueue"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Real-clock stress under -race: every item leaves exactly once, and the
// queue never stalls.

// Real clock, -race: producers, consumers of every kind and a remover; every
// item is accounted for exactly once.
func TestStressExactlyOnce(t *testing.T) {
	q := dq.New[int](dq.WithCapacity(256))
	const producers, perProducer = 4, 3000
	const total = producers * perProducer
	seen := make([]atomic.Int32, total)
	var removedN, takenN atomic.Int64
	handles := make(chan dq.Handle, total)

	var prodWG, consWG sync.WaitGroup
	for p := range producers {
		prodWG.Go(func() {
			for i := range perProducer {
				id := p*perProducer + i
				d := time.Duration(rand.IntN(2000)) * time.Microsecond
				var h dq.Handle
				var err error
				if i%2 == 0 {
					h, err = q.Put(context.Background(), id, time.Now().Add(d))
				} else {
					for {
						h, err = q.OfferAfter(id, d)
						if !errors.Is(err, dq.ErrFull) {
							break
						}
						runtime.Gosched()
					}
				}
				if err != nil {
					t.Errorf("offer %d: %v", id, err)
					return
				}
				if id%5 == 0 {
					handles <- h
				}
			}
		})
	}
	mark := func(v int) {
		seen[v].Add(1)
		takenN.Add(1)
	}
	for c := range 4 {
		consWG.Go(func() {
			var buf []int
			for {
				switch c {
				case 0, 1:
					v, err := q.Take(context.Background())
					if err != nil {
						return
					}
					mark(v)
				case 2:
					var err error
					buf, err = q.TakeBatch(context.Background(), buf[:0], 7)
					if err != nil {
						return
					}
					for _, v := range buf {
						mark(v)
					}
				case 3:
					v, ok := q.Poll()
					if ok {
						mark(v)
						continue
					}
					if q.Stats().Offered == total && q.Len() == 0 {
						return
					}
					time.Sleep(100 * time.Microsecond)
				}
			}
		})
	}
	remDone := make(chan struct{})
	go func() {
		defer close(remDone)
		for h := range handles {
			if v, ok := q.Remove(h); ok {
				seen[v].Add(1)
				removedN.Add(1)
			}
			if _, ok := q.Remove(h); ok {
				t.Errorf("a handle removed twice")
			}
		}
	}()
	prodWG.Wait()
	close(handles)
	<-remDone
	deadline := time.Now().Add(10 * time.Second)
	for q.Len() > 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	q.Close()
	consWG.Wait()
	drained := q.Drain()
	for _, v := range drained {
		seen[v].Add(1)
	}
	for i := range seen {
		require.Equal(t, int32(1), seen[i].Load(), "item %d", i)
	}
	s := q.Stats()
	assert.Equal(t, uint64(total), s.Offered)
	assert.Equal(t, uint64(takenN.Load()), s.Taken)
	assert.Equal(t, uint64(removedN.Load()), s.Removed)
	assert.Equal(t, uint64(len(drained)), s.Drained)
	assert.Zero(t, s.Waiting)
	checkAccounting(t, q)
}

// Randomized exactly-once + liveness stress: takers (some cancelling),
// producers (Offer/Put), a mutator (Remove/Reschedule/Poll/DrainExpired).
// Phase 2: producers stop, takers switch to uncancellable ctx; the queue
// must drain (no lost wake-up).
func TestStressLiveness(t *testing.T) {
	for _, precise := range []bool{false, true} {
		for _, capn := range []int{0, 16} {
			reviewStress(t, precise, capn)
		}
	}
}

func reviewStress(t *testing.T, precise bool, capn int) {
	opts := []dq.Option{dq.WithCapacity(capn)}
	if precise {
		opts = append(opts, dq.WithPreciseTimer())
	}
	q := dq.New[int64](opts...)
	var seen sync.Map
	var outN atomic.Int64
	record := func(v int64) {
		if _, dup := seen.LoadOrStore(v, true); dup {
			t.Errorf("duplicate %d", v)
		}
		outN.Add(1)
	}
	var phase2 atomic.Bool
	stopProd := make(chan struct{})
	var next atomic.Int64
	var handles sync.Map // id -> Handle
	var wgT, wgP sync.WaitGroup
	for i := range 24 {
		wgT.Add(1)
		go func() {
			defer wgT.Done()
			r := rand.New(rand.NewPCG(uint64(i), 1))
			for {
				ctx, cancel := context.Background(), context.CancelFunc(func() {})
				if !phase2.Load() && r.IntN(3) == 0 {
					ctx, cancel = context.WithTimeout(ctx, time.Duration(r.IntN(2000))*time.Microsecond)
				}
				if i%3 == 0 {
					vs, err := q.TakeBatch(ctx, nil, r.IntN(3))
					cancel()
					for _, v := range vs {
						record(v)
					}
					if errors.Is(err, dq.ErrClosed) {
						return
					}
				} else {
					v, err := q.Take(ctx)
					cancel()
					if err == nil {
						record(v)
					} else if errors.Is(err, dq.ErrClosed) {
						return
					}
				}
			}
		}()
	}
	for i := range 4 {
		wgP.Add(1)
		go func() {
			defer wgP.Done()
			r := rand.New(rand.NewPCG(uint64(i), 2))
			for {
				select {
				case <-stopProd:
					return
				default:
				}
				id := next.Add(1)
				at := time.Now().Add(time.Duration(r.IntN(3000)) * time.Microsecond)
				var h dq.Handle
				var err error
				if i%2 == 0 {
					ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
					h, err = q.Put(ctx, id, at)
					cancel()
				} else {
					h, err = q.Offer(id, at)
				}
				if err == nil {
					handles.Store(id, h)
				}
				if r.IntN(4) == 0 {
					time.Sleep(time.Duration(r.IntN(300)) * time.Microsecond)
				}
			}
		}()
	}
	wgP.Add(1)
	go func() { // mutator
		defer wgP.Done()
		r := rand.New(rand.NewPCG(9, 9))
		for {
			select {
			case <-stopProd:
				return
			default:
			}
			id := next.Load() - int64(r.IntN(20))
			hv, ok := handles.Load(id)
			if ok {
				h := hv.(dq.Handle)
				switch r.IntN(4) {
				case 0:
					if v, ok := q.Remove(h); ok {
						record(v)
					}
				case 1:
					q.Reschedule(h, time.Now().Add(time.Duration(r.IntN(3000)-500)*time.Microsecond))
				case 2:
					if v, ok := q.Poll(); ok {
						record(v)
					}
				case 3:
					for _, v := range q.DrainExpired(nil, 2) {
						record(v)
					}
				}
			}
			time.Sleep(time.Duration(r.IntN(200)) * time.Microsecond)
		}
	}()
	time.Sleep(1500 * time.Millisecond)
	close(stopProd)
	wgP.Wait()
	phase2.Store(true)
	deadline := time.Now().Add(3 * time.Second)
	for q.Len() > 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	st := q.Stats()
	if st.Len > 0 {
		t.Errorf("precise=%v cap=%d: lost wake-up? Len=%d Waiting=%d after 3s with everything due", precise, capn, st.Len, st.Waiting)
	}
	q.Close()
	wgT.Wait()
	for _, v := range q.Drain() {
		record(v)
	}
	st = q.Stats()
	if st.Offered != st.Taken+st.Removed+st.Drained+uint64(st.Len) || int64(st.Offered) != outN.Load() {
		t.Errorf("accounting: %+v out=%d", st, outN.Load())
	}
	t.Logf("precise=%v cap=%d: %+v", precise, capn, st)
}
