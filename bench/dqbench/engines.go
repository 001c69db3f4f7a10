package main

import (
	"container/heap"
	"context"
	"sync"
	"time"

	"github.com/dq-go/delayqueue"
)

// engine is one implementation of "deliver v to a consumer once at is past".
type engine[T any] interface {
	// offer schedules v for at. Producers call it concurrently.
	offer(v T, at time.Time) error
	// consume delivers due items to sink, up to batch at a time (batch <= 1:
	// one at a time), until ctx is done. Consumers call it concurrently.
	consume(ctx context.Context, batch int, sink func([]T))
	// wakeups reports the engine's wake-up counter, if it has one.
	wakeups() uint64
	close()
}

// ---------------------------------------------------------------------------
// delayqueue: the package under test.

type dqEngine[T any] struct{ q *delayqueue.Queue[T] }

func newDQ[T any](precise bool) engine[T] {
	var opts []delayqueue.Option
	if precise {
		opts = append(opts, delayqueue.WithPreciseTimer())
	}
	return &dqEngine[T]{q: delayqueue.New[T](opts...)}
}

func (e *dqEngine[T]) offer(v T, at time.Time) error {
	_, err := e.q.Offer(v, at)
	return err
}

func (e *dqEngine[T]) consume(ctx context.Context, batch int, sink func([]T)) {
	if batch <= 1 {
		buf := make([]T, 1)
		for {
			v, err := e.q.Take(ctx)
			if err != nil {
				return
			}
			buf[0] = v
			sink(buf)
		}
	}
	buf := make([]T, 0, batch)
	for {
		var err error
		buf, err = e.q.TakeBatch(ctx, buf[:0], batch)
		if err != nil {
			return
		}
		sink(buf)
	}
}

func (e *dqEngine[T]) wakeups() uint64 { return e.q.Stats().Wakeups }
func (e *dqEngine[T]) close()          { e.q.Close() }

// ---------------------------------------------------------------------------
// afterfunc: one time.AfterFunc per item, sending the item to a channel.

type afEngine[T any] struct {
	out  chan T
	done chan struct{}
}

func newAfterFunc[T any]() engine[T] {
	return &afEngine[T]{out: make(chan T, chanCap), done: make(chan struct{})}
}

func (e *afEngine[T]) offer(v T, at time.Time) error {
	time.AfterFunc(time.Until(at), func() {
		select {
		case e.out <- v:
		case <-e.done:
		}
	})
	return nil
}

func (e *afEngine[T]) consume(ctx context.Context, batch int, sink func([]T)) {
	chanConsume(ctx, e.out, batch, sink)
}

func (e *afEngine[T]) wakeups() uint64 { return 0 }
func (e *afEngine[T]) close()          { close(e.done) }

// chanCap is the buffer of the channel-based engines' output channel.
const chanCap = 4096

// chanConsume receives from ch and hands out whatever is already buffered,
// up to batch items, in one sink call: the channel engines' TakeBatch.
func chanConsume[T any](ctx context.Context, ch <-chan T, batch int, sink func([]T)) {
	buf := make([]T, 0, max(batch, 1))
	for {
		select {
		case v := <-ch:
			buf = append(buf[:0], v)
		fill:
			for len(buf) < cap(buf) {
				select {
				case v := <-ch:
					buf = append(buf, v)
				default:
					break fill
				}
			}
			sink(buf)
		case <-ctx.Done():
			return
		}
	}
}

// ---------------------------------------------------------------------------
// heapcond: mutex + container/heap + one dispatcher goroutine with a timer,
// which moves due items to a channel. The classic hand-rolled delay queue.

type hcItem[T any] struct {
	at  int64
	seq uint64
	v   T
}

type hcHeap[T any] []*hcItem[T]

func (h hcHeap[T]) Len() int { return len(h) }
func (h hcHeap[T]) Less(i, j int) bool {
	return h[i].at < h[j].at || (h[i].at == h[j].at && h[i].seq < h[j].seq)
}
func (h hcHeap[T]) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *hcHeap[T]) Push(x any)   { *h = append(*h, x.(*hcItem[T])) }
func (h *hcHeap[T]) Pop() any {
	old := *h
	n := len(old) - 1
	it := old[n]
	old[n] = nil
	*h = old[:n]
	return it
}

type hcEngine[T any] struct {
	base time.Time
	mu   sync.Mutex
	h    hcHeap[T]
	seq  uint64
	wake chan struct{}
	out  chan T
	stop chan struct{}
	wg   sync.WaitGroup
}

func newHeapCond[T any]() engine[T] {
	e := &hcEngine[T]{
		base: time.Now(),
		wake: make(chan struct{}, 1),
		out:  make(chan T, chanCap),
		stop: make(chan struct{}),
	}
	e.wg.Add(1)
	go e.loop()
	return e
}

func (e *hcEngine[T]) offer(v T, at time.Time) error {
	it := &hcItem[T]{at: int64(at.Sub(e.base)), v: v}
	e.mu.Lock()
	it.seq = e.seq
	e.seq++
	heap.Push(&e.h, it)
	head := e.h[0] == it
	e.mu.Unlock()
	if head {
		select {
		case e.wake <- struct{}{}:
		default:
		}
	}
	return nil
}

func (e *hcEngine[T]) loop() {
	defer e.wg.Done()
	t := time.NewTimer(time.Hour)
	buf := make([]T, 0, 256)
	for {
		e.mu.Lock()
		now := int64(time.Since(e.base))
		buf = buf[:0]
		for len(e.h) > 0 && e.h[0].at <= now && len(buf) < cap(buf) {
			buf = append(buf, heap.Pop(&e.h).(*hcItem[T]).v)
		}
		wait := time.Hour
		if len(e.h) > 0 {
			wait = time.Duration(e.h[0].at - now)
		}
		e.mu.Unlock()
		for _, v := range buf {
			select {
			case e.out <- v:
			case <-e.stop:
				return
			}
		}
		if len(buf) > 0 {
			continue
		}
		t.Reset(wait)
		select {
		case <-t.C:
		case <-e.wake:
			t.Stop()
		case <-e.stop:
			return
		}
	}
}

func (e *hcEngine[T]) consume(ctx context.Context, batch int, sink func([]T)) {
	chanConsume(ctx, e.out, batch, sink)
}

func (e *hcEngine[T]) wakeups() uint64 { return 0 }

func (e *hcEngine[T]) close() {
	close(e.stop)
	e.wg.Wait()
}
