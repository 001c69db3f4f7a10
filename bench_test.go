package delayqueue_test

// Micro benchmarks: the package heap and the Queue against the baselines a
// user would otherwise reach for, at 1e3, 1e5 and 1e6 items already queued.
//
// Names are key=value so benchstat can project them, e.g.
//
//	go test -run '^$' -bench . -count 6 -benchmem . > /tmp/bench.txt
//	benchstat -col /impl /tmp/bench.txt
//
// Workload ("hold model"): every operation advances a virtual clock by
// benchStep and gives the new item a deadline uniform in [clock, clock+span)
// with span = n*benchStep, so new items land at random depths of the heap
// while the minimum leaves: the steady state of a queue holding n items.
// Random numbers come from a seeded splitmix64 generator whose cost is the
// same for every implementation. "Due" fixtures put all deadlines in the
// past (so Poll always finds a due head), "pending" fixtures an hour or more
// in the future (so Remove/Reschedule act on waiting items).
//
// Fixtures are built once per (n, impl) on first use, outside the timed
// loop, kept for the -count repetitions of the sub-benchmarks that use them,
// and dropped as soon as those finish, so at most one implementation's
// fixture is live while another is timed (the allocating baselines pay for
// the GC of their own heap, not of someone else's).

import (
	"container/heap"
	"context"
	"math/bits"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dq-go/delayqueue"
)

var benchSizes = []struct {
	name string
	n    int
}{{"1e3", 1_000}, {"1e5", 100_000}, {"1e6", 1_000_000}}

// benchStep is how far the hold model's virtual clock advances per operation.
const benchStep = 1000 // ns

// benchBatch is the batch size of the op=batch256 benchmarks.
const benchBatch = 256

// benchRand is splitmix64: deterministic, alloc-free, a few ns per number.
type benchRand struct{ s uint64 }

func (r *benchRand) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	z := r.s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// intn returns a number in [0, n) without a division.
func (r *benchRand) intn(n int) int {
	hi, _ := bits.Mul64(r.next(), uint64(n))
	return int(hi)
}

// benchHold generates hold-model deadlines (ns) for a queue of n items.
type benchHold struct {
	r     benchRand
	clock int64
	span  int
}

func newBenchHold(n int, seed uint64) benchHold {
	return benchHold{r: benchRand{s: seed}, span: n * benchStep}
}

func (h *benchHold) next() int64 {
	h.clock += benchStep
	return h.clock + int64(h.r.intn(h.span))
}

// benchPast is a base time far enough in the past that every hold-model
// deadline after it is due for any benchmark run.
func benchPast() time.Time { return time.Now().Add(-1000 * time.Hour) }

// benchFuture is a base time for pending items: nothing falls due during a run.
func benchFuture() time.Time { return time.Now().Add(time.Hour) }

// benchCPU reports the process's CPU time per iteration as cpu-ns/op, from
// now until the benchmark function returns. Unlike ns/op it does not count
// time the process spent descheduled, so it stays comparable on a busy or
// shared machine (CI); it does count the GC work an implementation causes.
// Call it right before the timed loop, after any setup.
func benchCPU(b *testing.B) {
	c0 := benchCPUTime()
	if c0 < 0 {
		return
	}
	b.Cleanup(func() {
		if b.N > 0 {
			b.ReportMetric(float64(benchCPUTime()-c0)/float64(b.N), "cpu-ns/op")
		}
	})
}

// benchSettle collects the fixture's construction garbage before timing.
func benchSettle() { runtime.GC() }

// ---------------------------------------------------------------------------
// Baselines.

// benchNode has the package node's layout minus the slot: deadline, offer
// order and value, 24 bytes for an int64 value like the package's node.
type benchNode[T any] struct {
	at  int64
	seq uint32
	v   T
}

func benchLess[T any](a, b *benchNode[T]) bool {
	return a.at < b.at || (a.at == b.at && a.seq < b.seq)
}

// benchBinHeap is a bare generic binary min-heap ordered by (at, seq): no
// position tracking, no lock. It is the least work any delay queue can do.
type benchBinHeap[T any] struct {
	nodes []benchNode[T]
	seq   uint32
}

func (h *benchBinHeap[T]) push(v T, at int64) {
	h.nodes = append(h.nodes, benchNode[T]{at: at, seq: h.seq, v: v})
	h.seq++
	nodes := h.nodes
	j := len(nodes) - 1
	x := nodes[j]
	for j > 0 {
		p := (j - 1) / 2
		if !benchLess(&x, &nodes[p]) {
			break
		}
		nodes[j] = nodes[p]
		j = p
	}
	nodes[j] = x
}

func (h *benchBinHeap[T]) pop() T {
	nodes := h.nodes
	n := len(nodes) - 1
	v := nodes[0].v
	x := nodes[n]
	nodes[n] = benchNode[T]{} // as the package does, for the GC
	nodes = nodes[:n]
	h.nodes = nodes
	if n > 0 {
		i := 0
		for {
			c := 2*i + 1
			if c >= n {
				break
			}
			if c+1 < n && benchLess(&nodes[c+1], &nodes[c]) {
				c++
			}
			if !benchLess(&nodes[c], &x) {
				break
			}
			nodes[i] = nodes[c]
			i = c
		}
		nodes[i] = x
	}
	return v
}

// benchBinQueue is benchBinHeap behind the minimum a delay queue API needs:
// time.Time deadlines converted against a base, and a due check on Poll that
// reads the clock only when the cached reading is too old (as Queue does).
// The *Locked methods take an uncontended sync.Mutex: the floor for any
// locked queue; the others take no lock.
type benchBinQueue struct {
	mu      sync.Mutex
	base    time.Time
	h       benchBinHeap[int64]
	lastNow int64
}

func newBenchBinQueue() *benchBinQueue { return &benchBinQueue{base: time.Now()} }

func (q *benchBinQueue) due() bool {
	if len(q.h.nodes) == 0 {
		return false
	}
	at := q.h.nodes[0].at
	if at <= q.lastNow {
		return true
	}
	q.lastNow = int64(time.Since(q.base))
	return at <= q.lastNow
}

func (q *benchBinQueue) offer(v int64, at time.Time) { q.h.push(v, int64(at.Sub(q.base))) }

func (q *benchBinQueue) poll() (int64, bool) {
	if !q.due() {
		return 0, false
	}
	return q.h.pop(), true
}

func (q *benchBinQueue) pollBatch(dst []int64, max int) []int64 {
	for n := 0; n < max && q.due(); n++ {
		dst = append(dst, q.h.pop())
	}
	return dst
}

func (q *benchBinQueue) offerLocked(v int64, at time.Time) {
	t := int64(at.Sub(q.base))
	q.mu.Lock()
	q.h.push(v, t)
	q.mu.Unlock()
}

func (q *benchBinQueue) pollLocked() (int64, bool) {
	q.mu.Lock()
	v, ok := q.poll()
	q.mu.Unlock()
	return v, ok
}

func (q *benchBinQueue) pollBatchLocked(dst []int64, max int) []int64 {
	q.mu.Lock()
	dst = q.pollBatch(dst, max)
	q.mu.Unlock()
	return dst
}

// benchStdItem and benchStdHeap are the container/heap PriorityQueue of the
// package documentation: pointers to items that know their index, which is
// what Fix and Remove need; ordered by (at, seq) like the package heap.
type benchStdItem struct {
	at    int64
	seq   uint32
	index int
	v     int64
}

type benchStdHeap []*benchStdItem

func (h benchStdHeap) Len() int { return len(h) }
func (h benchStdHeap) Less(i, j int) bool {
	a, b := h[i], h[j]
	return a.at < b.at || (a.at == b.at && a.seq < b.seq)
}
func (h benchStdHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}
func (h *benchStdHeap) Push(x any) {
	it := x.(*benchStdItem)
	it.index = len(*h)
	*h = append(*h, it)
}
func (h *benchStdHeap) Pop() any {
	old := *h
	n := len(old) - 1
	it := old[n]
	old[n] = nil
	it.index = -1
	*h = old[:n]
	return it
}

// benchValHeap is container/heap over value nodes: every Push and Pop boxes
// a node in an interface.
type benchValHeap []benchNode[int64]

func (h benchValHeap) Len() int           { return len(h) }
func (h benchValHeap) Less(i, j int) bool { return benchLess(&h[i], &h[j]) }
func (h benchValHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *benchValHeap) Push(x any)        { *h = append(*h, x.(benchNode[int64])) }
func (h *benchValHeap) Pop() any {
	old := *h
	n := len(old) - 1
	x := old[n]
	*h = old[:n]
	return x
}

// benchStdQueue is a mutex + container/heap delay queue with the same API
// surface as the Queue operations benchmarked: the item is allocated outside
// the lock, Poll checks the head against a cached clock reading.
type benchStdQueue struct {
	mu      sync.Mutex
	base    time.Time
	h       benchStdHeap
	seq     uint32
	lastNow int64
}

func newBenchStdQueue() *benchStdQueue { return &benchStdQueue{base: time.Now()} }

func (q *benchStdQueue) Offer(v int64, at time.Time) *benchStdItem {
	it := &benchStdItem{at: int64(at.Sub(q.base)), v: v}
	q.mu.Lock()
	it.seq = q.seq
	q.seq++
	heap.Push(&q.h, it)
	q.mu.Unlock()
	return it
}

func (q *benchStdQueue) dueLocked() bool {
	if len(q.h) == 0 {
		return false
	}
	at := q.h[0].at
	if at <= q.lastNow {
		return true
	}
	q.lastNow = int64(time.Since(q.base))
	return at <= q.lastNow
}

func (q *benchStdQueue) Poll() (int64, bool) {
	q.mu.Lock()
	if !q.dueLocked() {
		q.mu.Unlock()
		return 0, false
	}
	it := heap.Pop(&q.h).(*benchStdItem)
	q.mu.Unlock()
	return it.v, true
}

func (q *benchStdQueue) PollBatch(dst []int64, max int) []int64 {
	q.mu.Lock()
	for n := 0; n < max && q.dueLocked(); n++ {
		dst = append(dst, heap.Pop(&q.h).(*benchStdItem).v)
	}
	q.mu.Unlock()
	return dst
}

func (q *benchStdQueue) Remove(it *benchStdItem) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if it.index < 0 {
		return false
	}
	heap.Remove(&q.h, it.index)
	return true
}

func (q *benchStdQueue) Reschedule(it *benchStdItem, at time.Time) bool {
	t := int64(at.Sub(q.base))
	q.mu.Lock()
	defer q.mu.Unlock()
	if it.index < 0 {
		return false
	}
	it.at = t
	it.seq = q.seq
	q.seq++
	heap.Fix(&q.h, it.index)
	return true
}

// ---------------------------------------------------------------------------
// BenchmarkHeap: the heaps alone, no lock, no clock.

func BenchmarkHeap(b *testing.B) {
	for _, sz := range benchSizes {
		n := sz.n
		b.Run("n="+sz.name, func(b *testing.B) {
			b.Run("impl=dq", func(b *testing.B) { benchHeapDQ(b, n) })
			b.Run("impl=bin", func(b *testing.B) { benchHeapBin(b, n) })
			b.Run("impl=std", func(b *testing.B) { benchHeapStd(b, n) })
			b.Run("impl=stdval", func(b *testing.B) { benchHeapStdVal(b, n) })
		})
	}
}

func benchHeapDQ(b *testing.B, n int) {
	{
		var h *delayqueue.BenchHeap[int64]
		var hold benchHold
		b.Run("op=pushpop", func(b *testing.B) {
			if h == nil {
				h, hold = new(delayqueue.BenchHeap[int64]), newBenchHold(n, 1)
				for i := range n {
					h.Push(int64(i), hold.next())
				}
				benchSettle()
			}
			b.ReportAllocs()
			v := int64(0)
			benchCPU(b)
			for b.Loop() {
				h.Push(v, hold.next())
				h.Pop()
				v++
			}
		})
	}
	type ref struct{ slot, gen uint32 }
	var h *delayqueue.BenchHeap[int64]
	var refs []ref
	r := benchRand{s: 2}
	span := n * benchStep
	build := func() {
		if h != nil {
			return
		}
		h, refs = new(delayqueue.BenchHeap[int64]), make([]ref, n)
		for i := range n {
			s, g := h.Push(int64(i), int64(r.intn(span)))
			refs[i] = ref{s, g}
		}
		benchSettle()
	}
	b.Run("op=fix", func(b *testing.B) {
		build()
		b.ReportAllocs()
		benchCPU(b)
		for b.Loop() {
			x := &refs[r.intn(n)]
			if !h.Fix(x.slot, x.gen, int64(r.intn(span))) {
				b.Fatal("stale ref")
			}
		}
	})
	b.Run("op=remove", func(b *testing.B) {
		build()
		b.ReportAllocs()
		v := int64(0)
		benchCPU(b)
		for b.Loop() {
			i := r.intn(n)
			x := &refs[i]
			if _, ok := h.Remove(x.slot, x.gen); !ok {
				b.Fatal("stale ref")
			}
			x.slot, x.gen = h.Push(v, int64(r.intn(span)))
			v++
		}
	})
}

func benchHeapBin(b *testing.B, n int) {
	var h *benchBinHeap[int64]
	var hold benchHold
	b.Run("op=pushpop", func(b *testing.B) {
		if h == nil {
			h, hold = new(benchBinHeap[int64]), newBenchHold(n, 1)
			for i := range n {
				h.push(int64(i), hold.next())
			}
			benchSettle()
		}
		b.ReportAllocs()
		v := int64(0)
		benchCPU(b)
		for b.Loop() {
			h.push(v, hold.next())
			h.pop()
			v++
		}
	})
}

func benchHeapStd(b *testing.B, n int) {
	{
		var h *benchStdHeap
		var hold benchHold
		var seq uint32
		b.Run("op=pushpop", func(b *testing.B) {
			if h == nil {
				h, hold = new(benchStdHeap), newBenchHold(n, 1)
				for i := range n {
					heap.Push(h, &benchStdItem{at: hold.next(), seq: seq, v: int64(i)})
					seq++
				}
				benchSettle()
			}
			b.ReportAllocs()
			v := int64(0)
			benchCPU(b)
			for b.Loop() {
				heap.Push(h, &benchStdItem{at: hold.next(), seq: seq, v: v})
				seq++
				heap.Pop(h)
				v++
			}
		})
	}
	runtime.GC() // drop the pushpop fixture before the next one is timed
	var h *benchStdHeap
	var items []*benchStdItem
	var seq uint32
	r := benchRand{s: 2}
	span := n * benchStep
	build := func() {
		if h != nil {
			return
		}
		h, items = new(benchStdHeap), make([]*benchStdItem, n)
		for i := range n {
			items[i] = &benchStdItem{at: int64(r.intn(span)), seq: seq, v: int64(i)}
			seq++
			heap.Push(h, items[i])
		}
		benchSettle()
	}
	b.Run("op=fix", func(b *testing.B) {
		build()
		b.ReportAllocs()
		benchCPU(b)
		for b.Loop() {
			it := items[r.intn(n)]
			it.at = int64(r.intn(span))
			it.seq = seq
			seq++
			heap.Fix(h, it.index)
		}
	})
	b.Run("op=remove", func(b *testing.B) {
		build()
		b.ReportAllocs()
		v := int64(0)
		benchCPU(b)
		for b.Loop() {
			i := r.intn(n)
			heap.Remove(h, items[i].index)
			items[i] = &benchStdItem{at: int64(r.intn(span)), seq: seq, v: v}
			seq++
			heap.Push(h, items[i])
			v++
		}
	})
}

func benchHeapStdVal(b *testing.B, n int) {
	var h *benchValHeap
	var hold benchHold
	var seq uint32
	b.Run("op=pushpop", func(b *testing.B) {
		if h == nil {
			h, hold = new(benchValHeap), newBenchHold(n, 1)
			for i := range n {
				heap.Push(h, benchNode[int64]{at: hold.next(), seq: seq, v: int64(i)})
				seq++
			}
			benchSettle()
		}
		b.ReportAllocs()
		v := int64(0)
		benchCPU(b)
		for b.Loop() {
			heap.Push(h, benchNode[int64]{at: hold.next(), seq: seq, v: v})
			seq++
			heap.Pop(h)
			v++
		}
	})
}

// ---------------------------------------------------------------------------
// BenchmarkQueue: the public Queue and the baseline queues.
//
//	op=offerpoll   Offer a due item + Poll the due head (size stays n)
//	op=offertake   Offer a due item + Take the due head
//	op=batch256    256 Offers of due items + one batch take of 256
//	op=cancel      Remove a random pending item + Offer a new one
//	op=reschedule  Reschedule a random pending item
//
// impl=dq is the Queue; bin the bare binary heap with no lock; mutexbin the
// same under an uncontended mutex; mutexstd mutex + container/heap (pointer
// items, the documented PriorityQueue); afterfunc one time.AfterFunc per
// item (cancel = Stop, reschedule = Reset).

func BenchmarkQueue(b *testing.B) {
	for _, sz := range benchSizes {
		n := sz.n
		b.Run("n="+sz.name, func(b *testing.B) {
			b.Run("impl=dq", func(b *testing.B) { benchQueueDQ(b, n) })
			b.Run("impl=bin", func(b *testing.B) { benchQueueBin(b, n, false) })
			b.Run("impl=mutexbin", func(b *testing.B) { benchQueueBin(b, n, true) })
			b.Run("impl=mutexstd", func(b *testing.B) { benchQueueStd(b, n) })
			b.Run("impl=afterfunc", func(b *testing.B) { benchQueueAfterFunc(b, n) })
		})
	}
}

// benchDueQueue is a Queue holding n due items, with its hold model.
type benchDueQueue struct {
	q    *delayqueue.Queue[int64]
	t0   time.Time
	hold benchHold
}

func newBenchDueQueue(tb testing.TB, n int) *benchDueQueue {
	f := &benchDueQueue{q: delayqueue.New[int64](), t0: benchPast(), hold: newBenchHold(n, 1)}
	for i := range n {
		if _, err := f.q.Offer(int64(i), f.next()); err != nil {
			tb.Fatal(err)
		}
	}
	benchSettle()
	return f
}

func (f *benchDueQueue) next() time.Time { return f.t0.Add(time.Duration(f.hold.next())) }

func benchQueueDQ(b *testing.B, n int) {
	ctx := context.Background()
	{
		var f *benchDueQueue
		get := func() *benchDueQueue {
			if f == nil {
				f = newBenchDueQueue(b, n)
			}
			return f
		}
		b.Run("op=offerpoll", func(b *testing.B) {
			f := get()
			b.ReportAllocs()
			v := int64(0)
			benchCPU(b)
			for b.Loop() {
				if _, err := f.q.Offer(v, f.next()); err != nil {
					b.Fatal(err)
				}
				if _, ok := f.q.Poll(); !ok {
					b.Fatal("Poll found nothing due")
				}
				v++
			}
		})
		b.Run("op=offertake", func(b *testing.B) {
			f := get()
			b.ReportAllocs()
			v := int64(0)
			benchCPU(b)
			for b.Loop() {
				if _, err := f.q.Offer(v, f.next()); err != nil {
					b.Fatal(err)
				}
				if _, err := f.q.Take(ctx); err != nil {
					b.Fatal(err)
				}
				v++
			}
		})
		b.Run("op=batch256", func(b *testing.B) {
			f := get()
			buf := make([]int64, 0, benchBatch)
			b.ReportAllocs()
			v := int64(0)
			benchCPU(b)
			for b.Loop() {
				for range benchBatch {
					if _, err := f.q.Offer(v, f.next()); err != nil {
						b.Fatal(err)
					}
					v++
				}
				var err error
				if buf, err = f.q.TakeBatch(ctx, buf[:0], benchBatch); err != nil || len(buf) != benchBatch {
					b.Fatal("TakeBatch:", len(buf), err)
				}
			}
			benchReportPerItem(b)
		})
	}
	runtime.GC()
	var q *delayqueue.Queue[int64]
	var hs []delayqueue.Handle
	var tp time.Time
	r := benchRand{s: 2}
	span := n * benchStep
	build := func() {
		if q != nil {
			return
		}
		q, hs, tp = delayqueue.New[int64](), make([]delayqueue.Handle, n), benchFuture()
		for i := range n {
			var err error
			if hs[i], err = q.Offer(int64(i), tp.Add(time.Duration(r.intn(span)))); err != nil {
				b.Fatal(err)
			}
		}
		benchSettle()
	}
	b.Run("op=cancel", func(b *testing.B) {
		build()
		b.ReportAllocs()
		v := int64(0)
		benchCPU(b)
		for b.Loop() {
			h := &hs[r.intn(n)]
			if _, ok := q.Remove(*h); !ok {
				b.Fatal("Remove: stale handle")
			}
			var err error
			if *h, err = q.Offer(v, tp.Add(time.Duration(r.intn(span)))); err != nil {
				b.Fatal(err)
			}
			v++
		}
	})
	b.Run("op=reschedule", func(b *testing.B) {
		build()
		b.ReportAllocs()
		benchCPU(b)
		for b.Loop() {
			if !q.Reschedule(hs[r.intn(n)], tp.Add(time.Duration(r.intn(span)))) {
				b.Fatal("Reschedule: stale handle")
			}
		}
	})
}

// benchReportPerItem adds ns/item for the batch benchmarks.
func benchReportPerItem(b *testing.B) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchBatch), "ns/item")
}

func benchQueueBin(b *testing.B, n int, locked bool) {
	var q *benchBinQueue
	var t0 time.Time
	var hold benchHold
	get := func() {
		if q != nil {
			return
		}
		q, t0, hold = newBenchBinQueue(), benchPast(), newBenchHold(n, 1)
		for i := range n {
			q.offer(int64(i), t0.Add(time.Duration(hold.next())))
		}
		benchSettle()
	}
	b.Run("op=offerpoll", func(b *testing.B) {
		get()
		b.ReportAllocs()
		v := int64(0)
		if locked {
			benchCPU(b)
			for b.Loop() {
				q.offerLocked(v, t0.Add(time.Duration(hold.next())))
				if _, ok := q.pollLocked(); !ok {
					b.Fatal("nothing due")
				}
				v++
			}
		} else {
			benchCPU(b)
			for b.Loop() {
				q.offer(v, t0.Add(time.Duration(hold.next())))
				if _, ok := q.poll(); !ok {
					b.Fatal("nothing due")
				}
				v++
			}
		}
	})
	b.Run("op=batch256", func(b *testing.B) {
		get()
		buf := make([]int64, 0, benchBatch)
		b.ReportAllocs()
		v := int64(0)
		benchCPU(b)
		for b.Loop() {
			if locked {
				for range benchBatch {
					q.offerLocked(v, t0.Add(time.Duration(hold.next())))
					v++
				}
				buf = q.pollBatchLocked(buf[:0], benchBatch)
			} else {
				for range benchBatch {
					q.offer(v, t0.Add(time.Duration(hold.next())))
					v++
				}
				buf = q.pollBatch(buf[:0], benchBatch)
			}
			if len(buf) != benchBatch {
				b.Fatal("short batch")
			}
		}
		benchReportPerItem(b)
	})
}

func benchQueueStd(b *testing.B, n int) {
	{
		var q *benchStdQueue
		var t0 time.Time
		var hold benchHold
		get := func() {
			if q != nil {
				return
			}
			q, t0, hold = newBenchStdQueue(), benchPast(), newBenchHold(n, 1)
			for i := range n {
				q.Offer(int64(i), t0.Add(time.Duration(hold.next())))
			}
			benchSettle()
		}
		b.Run("op=offerpoll", func(b *testing.B) {
			get()
			b.ReportAllocs()
			v := int64(0)
			benchCPU(b)
			for b.Loop() {
				q.Offer(v, t0.Add(time.Duration(hold.next())))
				if _, ok := q.Poll(); !ok {
					b.Fatal("nothing due")
				}
				v++
			}
		})
		b.Run("op=batch256", func(b *testing.B) {
			get()
			buf := make([]int64, 0, benchBatch)
			b.ReportAllocs()
			v := int64(0)
			benchCPU(b)
			for b.Loop() {
				for range benchBatch {
					q.Offer(v, t0.Add(time.Duration(hold.next())))
					v++
				}
				if buf = q.PollBatch(buf[:0], benchBatch); len(buf) != benchBatch {
					b.Fatal("short batch")
				}
			}
			benchReportPerItem(b)
		})
	}
	runtime.GC()
	var q *benchStdQueue
	var items []*benchStdItem
	var tp time.Time
	r := benchRand{s: 2}
	span := n * benchStep
	build := func() {
		if q != nil {
			return
		}
		q, items, tp = newBenchStdQueue(), make([]*benchStdItem, n), benchFuture()
		for i := range n {
			items[i] = q.Offer(int64(i), tp.Add(time.Duration(r.intn(span))))
		}
		benchSettle()
	}
	b.Run("op=cancel", func(b *testing.B) {
		build()
		b.ReportAllocs()
		v := int64(0)
		benchCPU(b)
		for b.Loop() {
			it := &items[r.intn(n)]
			if !q.Remove(*it) {
				b.Fatal("stale item")
			}
			*it = q.Offer(v, tp.Add(time.Duration(r.intn(span))))
			v++
		}
	})
	b.Run("op=reschedule", func(b *testing.B) {
		build()
		b.ReportAllocs()
		benchCPU(b)
		for b.Loop() {
			if !q.Reschedule(items[r.intn(n)], tp.Add(time.Duration(r.intn(span)))) {
				b.Fatal("stale item")
			}
		}
	})
}

func benchNop() {}

func benchQueueAfterFunc(b *testing.B, n int) {
	var timers []*time.Timer
	r := benchRand{s: 2}
	span := n * benchStep
	build := func() {
		if timers != nil {
			return
		}
		timers = make([]*time.Timer, n)
		for i := range timers {
			timers[i] = time.AfterFunc(time.Hour+time.Duration(r.intn(span)), benchNop)
		}
		benchSettle()
	}
	defer func() {
		for _, t := range timers {
			t.Stop()
		}
	}()
	b.Run("op=cancel", func(b *testing.B) {
		build()
		b.ReportAllocs()
		benchCPU(b)
		for b.Loop() {
			t := &timers[r.intn(n)]
			if !(*t).Stop() {
				b.Fatal("timer already fired")
			}
			*t = time.AfterFunc(time.Hour+time.Duration(r.intn(span)), benchNop)
		}
	})
	b.Run("op=reschedule", func(b *testing.B) {
		build()
		b.ReportAllocs()
		benchCPU(b)
		for b.Loop() {
			timers[r.intn(n)].Reset(time.Hour + time.Duration(r.intn(span)))
		}
	})
}

// ---------------------------------------------------------------------------
// BenchmarkContention: producers and consumers on one Queue of n due items.
// With b.SetParallelism(2) there are 2*GOMAXPROCS goroutines: half offer
// due items, half Take them (blocking when they find the queue empty).
// ns/op is per operation, an Offer or a Take. When the last producer is
// done the consumers' context is cancelled, so a consumer left with
// iterations and nothing to take does not block forever.

func BenchmarkContention(b *testing.B) {
	for _, sz := range benchSizes {
		n := sz.n
		b.Run("n="+sz.name, func(b *testing.B) {
			var f *benchDueQueue
			for _, procs := range []int{1, 2} {
				b.Run("procs="+strconv.Itoa(procs), func(b *testing.B) {
					if f == nil {
						f = newBenchDueQueue(b, n)
					}
					benchContention(b, f, n, procs)
				})
			}
		})
	}
}

func benchContention(b *testing.B, f *benchDueQueue, n, procs int) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var ids atomic.Uint64
	var producers atomic.Int64
	producers.Store(int64(procs))
	clock := f.hold.clock
	w0 := f.q.Stats().Wakeups
	b.ReportAllocs()
	b.SetParallelism(2)
	b.ResetTimer()
	c0 := benchCPUTime()
	b.RunParallel(func(pb *testing.PB) {
		id := ids.Add(1) - 1
		if id%2 == 0 {
			hold := newBenchHold(n, id+10)
			hold.clock = clock
			v := int64(0)
			for pb.Next() {
				if _, err := f.q.Offer(v, f.t0.Add(time.Duration(hold.next()))); err != nil {
					b.Error(err)
					return
				}
				v++
			}
			if producers.Add(-1) == 0 {
				cancel()
			}
			return
		}
		for pb.Next() {
			_, _ = f.q.Take(ctx) // fails only once every producer is done
		}
	})
	b.StopTimer()
	if c0 >= 0 {
		b.ReportMetric(float64(benchCPUTime()-c0)/float64(b.N), "cpu-ns/op")
	}
	b.ReportMetric(float64(f.q.Stats().Wakeups-w0)/float64(b.N), "wakeups/op")
	// Back to n items for the next run.
	for f.q.Len() > n {
		f.q.Poll()
	}
	for f.q.Len() < n {
		if _, err := f.q.Offer(0, f.next()); err != nil {
			b.Fatal(err)
		}
	}
}
