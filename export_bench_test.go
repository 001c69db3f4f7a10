package delayqueue

// This file exposes the unexported heap to the external benchmarks in
// bench_test.go (package delayqueue_test), so that they can compare it with
// other heaps without the Queue's lock and clock around it. It adds no logic:
// each method is the operation the Queue itself performs under its mutex.

// BenchHeap is the package heap, for benchmarks only.
type BenchHeap[T any] struct{ h heap[T] }

// Push adds v with deadline at (nanoseconds) and returns its handle parts.
func (b *BenchHeap[T]) Push(v T, at int64) (slot, gen uint32) { return b.h.push(v, at) }

// Pop removes and returns the minimum. The heap must not be empty.
func (b *BenchHeap[T]) Pop() T { return b.h.pop() }

// Len returns the number of items.
func (b *BenchHeap[T]) Len() int { return b.h.len() }

// HeadAt returns the minimum deadline. The heap must not be empty.
func (b *BenchHeap[T]) HeadAt() int64 { return b.h.head().at }

// Fix gives the item (slot, gen) the deadline at, as Queue.Reschedule does.
func (b *BenchHeap[T]) Fix(slot, gen uint32, at int64) bool {
	i := b.h.lookup(slot, gen)
	if i < 0 {
		return false
	}
	b.h.fix(i, at)
	return true
}

// Remove removes the item (slot, gen), as Queue.Remove does.
func (b *BenchHeap[T]) Remove(slot, gen uint32) (T, bool) {
	i := b.h.lookup(slot, gen)
	if i < 0 {
		var zero T
		return zero, false
	}
	return b.h.removeAt(i), true
}
