package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dq-go/delayqueue/bench/internal/report"
)

// codec turns item indexes into queue values and back: the payload of an
// item is (or starts with) its index, which addresses the preallocated
// deadline and delivery arrays.
type codec[T any] struct {
	make  func(i int) T
	index func(v T) int
}

var int64Codec = codec[int64]{
	make:  func(i int) int64 { return int64(i) },
	index: func(v int64) int { return int(v) },
}

func bytesCodec(size int) codec[[]byte] {
	size = max(size, 8)
	return codec[[]byte]{
		make: func(i int) []byte {
			b := make([]byte, size)
			binary.LittleEndian.PutUint64(b, uint64(i))
			return b
		},
		index: func(v []byte) int { return int(binary.LittleEndian.Uint64(v)) },
	}
}

// runQueue runs the burst or steady workload on one engine and measures it.
func runQueue[T any](name string, o *options, newEngine func() engine[T], c codec[T]) report.Result {
	n := o.items
	if o.mode == "steady" {
		n = int(o.rate * o.duration.Seconds())
	}
	res := report.Result{Name: name, Kind: "queue", Mode: o.mode, Items: n, HeapPerItem: -1}
	deadline := make([]int64, n) // ns since start
	got := make([]int64, n)      // delivery, ns since start; 0: not delivered
	var order []int32            // burst: the order in which items are offered
	if o.mode == "burst" {
		// Item i is the i-th to fall due and items are offered in random
		// order: the deadlines are random as offered, while deliveries,
		// which come in deadline order, write got[] sequentially, so that
		// recording them costs the consumer no cache misses.
		r := rand.New(rand.NewPCG(o.seed, o.seed))
		for i := range deadline {
			deadline[i] = int64(o.lead)
			if o.window > 0 {
				deadline[i] += r.Int64N(int64(o.window))
			}
		}
		slices.Sort(deadline)
		order = make([]int32, n)
		for i := range order {
			order[i] = int32(i)
		}
		r.Shuffle(n, func(i, j int) { order[i], order[j] = order[j], order[i] })
	}

	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	heap0 := ms.HeapAlloc

	e := newEngine()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var delivered, offered atomic.Int64
	var dups atomic.Int64
	allDone := make(chan struct{})
	start := time.Now()
	sink := func(vs []T) {
		now := int64(time.Since(start))
		d := 0
		for _, v := range vs {
			i := c.index(v)
			if got[i] != 0 {
				d++
				continue
			}
			got[i] = now
		}
		if d > 0 {
			dups.Add(int64(d))
		}
		if delivered.Add(int64(len(vs)-d)) == int64(n) {
			close(allDone)
		}
	}

	cpu0 := report.CPUTime()
	var cwg sync.WaitGroup
	for range o.consumers {
		cwg.Add(1)
		go func() {
			defer cwg.Done()
			e.consume(ctx, o.batch, sink)
		}()
	}
	stopProgress := o.Progress(name, n, &offered, &delivered, start)

	var pwg sync.WaitGroup
	var offerErr atomic.Value
	for p := range o.producers {
		lo, hi := p*n/o.producers, (p+1)*n/o.producers
		pwg.Add(1)
		go func() {
			defer pwg.Done()
			var err error
			if o.mode == "burst" {
				err = offerBurst(e, c, start, deadline, order[lo:hi], &offered)
			} else {
				err = offerSteady(e, c, start, deadline, lo, hi, o.rate/float64(o.producers), o.delay, &offered)
			}
			if err != nil {
				offerErr.Store(err)
			}
		}()
	}
	pwg.Wait()
	offerDone := time.Since(start)
	res.OfferSeconds = offerDone.Seconds()
	res.OfferRate = float64(n) / offerDone.Seconds()
	if err, _ := offerErr.Load().(error); err != nil {
		res.Note = "offer failed: " + err.Error()
	}

	if o.mode == "burst" {
		// Measure the heap with everything queued, if that can be done
		// before the first deadline (GC then would perturb the lateness).
		if time.Duration(int64(o.lead)-int64(time.Since(start))) > 100*time.Millisecond {
			runtime.GC()
			runtime.ReadMemStats(&ms)
			res.HeapPerItem = (float64(ms.HeapAlloc) - float64(heap0)) / float64(n)
		} else {
			res.Note = report.JoinNote(res.Note, fmt.Sprintf("offers took %v, past -lead minus 100ms: heap not measured; raise -lead", offerDone.Round(time.Millisecond)))
		}
	}

	var limit time.Duration
	if o.mode == "burst" {
		limit = o.lead + o.window + max(5*time.Second, o.window)
	} else {
		limit = o.duration + o.delay + max(5*time.Second, o.delay)
	}
	select {
	case <-allDone:
	case <-time.After(limit - time.Since(start)):
		res.Note = report.JoinNote(res.Note, "timed out waiting for deliveries")
	}
	cpu1 := report.CPUTime()
	cancel()
	cwg.Wait()
	res.Wakeups = e.wakeups()
	if se, ok := e.(statsLatenessEngine); ok {
		res.StatsLateness = percentilesOf(se.statsLateness())
	}
	e.close()
	stopProgress()

	res.CPUSeconds = (cpu1 - cpu0).Seconds()
	res.Delivered = int(delivered.Load())
	res.Duplicates = int(dups.Load())
	if res.Delivered > 0 {
		res.CPUPerItemNs = float64(cpu1-cpu0) / float64(res.Delivered)
	}
	lat := make([]int64, 0, res.Delivered)
	first, last := int64(1<<62), int64(0)
	for i, g := range got {
		if g == 0 {
			continue
		}
		l := g - deadline[i]
		if l < 0 {
			res.Early++
		}
		lat = append(lat, l)
		first = min(first, deadline[i])
		last = max(last, g)
	}
	if len(lat) > 0 && last > first {
		res.DeliverRate = float64(len(lat)) / (float64(last-first) / 1e9)
	}
	res.SetLateness(lat)
	if res.Delivered < n {
		res.Note = report.JoinNote(res.Note, fmt.Sprintf("%d items NOT delivered", n-res.Delivered))
	}
	return res
}

func offerBurst[T any](e engine[T], c codec[T], start time.Time, deadline []int64, order []int32, offered *atomic.Int64) error {
	for k, i := range order {
		if err := e.offer(c.make(int(i)), start.Add(time.Duration(deadline[i]))); err != nil {
			return err
		}
		if k&1023 == 1023 {
			offered.Add(1024)
		}
	}
	offered.Add(int64(len(order) & 1023))
	return nil
}

// offerSteady offers items lo..hi-1 at rate items/s, each due delay after
// the moment it is offered.
func offerSteady[T any](e engine[T], c codec[T], start time.Time, deadline []int64, lo, hi int, rate float64, delay time.Duration, offered *atomic.Int64) error {
	t0 := time.Since(start)
	for k, i := 0, lo; i < hi; {
		now := time.Since(start)
		// Offer everything scheduled up to now, then sleep to the next.
		for ; i < hi && t0+time.Duration(float64(k)/rate*1e9) <= now; i, k = i+1, k+1 {
			deadline[i] = int64(now + delay)
			if err := e.offer(c.make(i), start.Add(time.Duration(deadline[i]))); err != nil {
				return err
			}
			offered.Add(1)
		}
		if i < hi {
			time.Sleep(t0 + time.Duration(float64(k)/rate*1e9) - time.Since(start))
		}
	}
	return nil
}
