package delayqueue

import (
	"fmt"
	"reflect"
)

// This file exports test-only hooks into the unexported heap and the
// Queue's internals for the external test package (delayqueue_test).

// Arity is the heap's fan-out.
const Arity = arity

// TestHeap wraps the unexported heap so property tests can drive it alone.
type TestHeap[T any] struct{ h heap[T] }

// Push adds v with deadline at and returns its slot and generation.
func (t *TestHeap[T]) Push(v T, at int64) (slot, gen uint32) { return t.h.push(v, at) }

// Pop removes and returns the minimum. The heap must not be empty.
func (t *TestHeap[T]) Pop() T { return t.h.pop() }

// RemoveAt removes and returns the value at index i.
func (t *TestHeap[T]) RemoveAt(i int) T { return t.h.removeAt(i) }

// Fix gives the node at index i deadline at and a fresh sequence number.
func (t *TestHeap[T]) Fix(i int, at int64) { t.h.fix(i, at) }

// Lookup returns the index of the live item (slot, gen), or -1.
func (t *TestHeap[T]) Lookup(slot, gen uint32) int { return t.h.lookup(slot, gen) }

// Len returns the number of nodes.
func (t *TestHeap[T]) Len() int { return t.h.len() }

// Head returns the minimum value and its deadline. The heap must not be empty.
func (t *TestHeap[T]) Head() (T, int64) { n := t.h.head(); return n.v, n.at }

// SetNextSeq sets the sequence counter, e.g. near math.MaxUint32 to force
// a renumbering soon.
func (t *TestHeap[T]) SetNextSeq(s uint32) { t.h.nextSeq = s }

// NextSeq returns the sequence counter.
func (t *TestHeap[T]) NextSeq() uint32 { return t.h.nextSeq }

// CheckInvariants checks the heap: the 4-ary heap order, the position
// tracking of every live node, the free list, and that the vacated part of
// the backing array holds only zero nodes.
func (t *TestHeap[T]) CheckInvariants() error { return checkHeap(&t.h) }

// VacatedZero reports whether every array element between len and cap of
// the node array is the zero node (so no removed value is retained).
func (t *TestHeap[T]) VacatedZero() bool { return vacatedZero(&t.h) }

func checkHeap[T any](h *heap[T]) error {
	nodes := h.nodes
	for i := 1; i < len(nodes); i++ {
		p := (i - 1) / arity
		if less(&nodes[i], &nodes[p]) {
			return fmt.Errorf("heap order: node %d (at=%d seq=%d) < parent %d (at=%d seq=%d)",
				i, nodes[i].at, nodes[i].seq, p, nodes[p].at, nodes[p].seq)
		}
	}
	live := make(map[uint32]bool, len(nodes))
	seqs := make(map[uint32]bool, len(nodes))
	for i := range nodes {
		s := nodes[i].slot
		if int(s) >= len(h.slots) {
			return fmt.Errorf("node %d: slot %d out of range %d", i, s, len(h.slots))
		}
		if live[s] {
			return fmt.Errorf("node %d: slot %d used twice", i, s)
		}
		live[s] = true
		if got := h.slots[s].pos; got != uint32(i) {
			return fmt.Errorf("node %d: slots[%d].pos = %d", i, s, got)
		}
		if h.slots[s].gen == 0 {
			return fmt.Errorf("node %d: slot %d has generation 0", i, s)
		}
		if seqs[nodes[i].seq] {
			return fmt.Errorf("node %d: duplicate seq %d", i, nodes[i].seq)
		}
		seqs[nodes[i].seq] = true
		if nodes[i].seq >= h.nextSeq {
			return fmt.Errorf("node %d: seq %d >= nextSeq %d", i, nodes[i].seq, h.nextSeq)
		}
	}
	// Walk the free list: every free slot is unreferenced, no cycles, and
	// free + live account for every slot.
	free := 0
	if h.inited {
		for s := h.freeSlot; s != noSlot; s = h.slots[s].pos {
			if int(s) >= len(h.slots) {
				return fmt.Errorf("free list: slot %d out of range %d", s, len(h.slots))
			}
			if live[s] {
				return fmt.Errorf("free list: slot %d is referenced by a live node", s)
			}
			free++
			if free > len(h.slots) {
				return fmt.Errorf("free list: cycle")
			}
		}
	}
	if free+len(nodes) != len(h.slots) {
		return fmt.Errorf("slots: %d free + %d live != %d", free, len(nodes), len(h.slots))
	}
	if !vacatedZero(h) {
		return fmt.Errorf("backing array retains a vacated node")
	}
	return nil
}

func vacatedZero[T any](h *heap[T]) bool {
	all := h.nodes[:cap(h.nodes)]
	for i := len(h.nodes); i < len(all); i++ {
		if !reflect.ValueOf(&all[i]).Elem().IsZero() {
			return false
		}
	}
	return true
}

// CheckQueue checks the queue's heap invariants and its leader/follower
// bookkeeping under its lock.
func CheckQueue[T any](q *Queue[T]) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if err := checkHeap(&q.heap); err != nil {
		return err
	}
	if q.leader != nil && q.leader.list != nil {
		return fmt.Errorf("leader is also on a wait list")
	}
	return nil
}

// VacatedZero reports whether the queue's node array holds only zero
// nodes past its length.
func VacatedZero[T any](q *Queue[T]) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return vacatedZero(&q.heap)
}

// SetNextSeq sets the queue heap's sequence counter.
func SetNextSeq[T any](q *Queue[T], s uint32) {
	q.mu.Lock()
	q.heap.nextSeq = s
	q.mu.Unlock()
}

// NextSeq returns the queue heap's sequence counter.
func NextSeq[T any](q *Queue[T]) uint32 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.heap.nextSeq
}

// WaitState reports whether the queue has a leader, how many takers wait as
// followers and how many Puts are blocked.
func WaitState[T any](q *Queue[T]) (leader bool, followers, putters int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.leader != nil, q.followers.n, q.putters.n
}

// Node returns the value and deadline of the node at index i.
func (t *TestHeap[T]) Node(i int) (T, int64) { n := &t.h.nodes[i]; return n.v, n.at }
