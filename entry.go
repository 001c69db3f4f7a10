package delayqueue

import (
	"slices"
	"time"
)

// Entry is a queued value with its deadline, as Snapshot, DrainEntries and
// Shutdown return them.
//
// Deadline is the deadline the value was offered with, as the queue's clock
// holds it (see Peek). It carries a monotonic clock reading, so offering it
// to another queue in the same process places the value exactly where it
// was. Monotonic readings do not survive the process: to save a schedule
// across a restart, store the wall-clock time (Deadline.Round(0), or any
// encoding of it: encoding/json, gob and MarshalBinary keep only the wall
// clock), and the new queue places each deadline by its wall-clock distance
// from when it was created, so a step of the wall clock in between moves
// the restored deadlines with it.
type Entry[T any] struct {
	Value    T
	Deadline time.Time
}

// deadlineOf turns a deadline on the queue's clock back into a time.Time.
// A deadline clamped at either end of the clock's range (see Offer) lies
// outside the years a monotonic reading can go with (1885-2157), so Add
// drops the reading and it prints as a plain date.
func (q *Queue[T]) deadlineOf(at int64) time.Time { return q.base.Add(time.Duration(at)) }

// Snapshot returns every queued value with its deadline, in delivery order,
// without removing anything; nil if the queue is empty. Offering the
// entries in this order to an empty queue rebuilds the same schedule,
// equal deadlines included. It works whether the queue is open or closed.
// It holds the queue's lock only to copy the items; sorting them costs
// O(n log n) outside it.
func (q *Queue[T]) Snapshot() []Entry[T] {
	q.mustNew()
	nodes := q.snapshotNodes(nil)
	if len(nodes) == 0 {
		return nil
	}
	out := make([]Entry[T], len(nodes))
	for i := range nodes {
		out[i] = Entry[T]{Value: nodes[i].v, Deadline: q.deadlineOf(nodes[i].at)}
	}
	return out
}

// snapshotNodes copies the queued nodes under the lock, calling locked (if
// not nil) in the same critical section, and sorts them into delivery order
// outside it.
func (q *Queue[T]) snapshotNodes(locked func()) []node[T] {
	q.mu.Lock()
	nodes := slices.Clone(q.heap.nodes)
	if locked != nil {
		locked()
	}
	q.mu.Unlock()
	slices.SortFunc(nodes, compareNodes[T])
	return nodes
}

// DrainEntries is Drain returning each value with its deadline: it removes
// every item, due or not, and returns them in delivery order (nil if the
// queue is empty), open or closed.
func (q *Queue[T]) DrainEntries() []Entry[T] {
	q.mustNew()
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.drainEntriesLocked()
}

func (q *Queue[T]) drainEntriesLocked() []Entry[T] {
	n := q.heap.len()
	if n == 0 {
		return nil
	}
	out := make([]Entry[T], 0, n)
	for q.heap.len() > 0 {
		at := q.heap.head().at
		out = append(out, Entry[T]{Value: q.heap.pop(), Deadline: q.deadlineOf(at)})
	}
	q.drained += uint64(n)
	q.spaceFreedLocked(n)
	return out
}

// Deadline returns the deadline of the item h refers to, as Peek returns a
// deadline. It returns false as Remove does.
func (q *Queue[T]) Deadline(h Handle) (time.Time, bool) {
	q.mustNew()
	if h.queue != q.id {
		return time.Time{}, false
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	i := q.heap.lookup(h.slot, h.gen)
	if i < 0 {
		return time.Time{}, false
	}
	return q.deadlineOf(q.heap.nodes[i].at), true
}
