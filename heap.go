package delayqueue

import (
	"math"
	"slices"
)

// arity is the number of children of each heap node. A 4-ary heap is half
// as deep as a binary one, and a node's children sit next to each other in
// memory, so a sift touches fewer cache lines. Sifting down makes about the
// same number of comparisons as in a binary heap (4 per level, half the
// levels); sifting up makes half as many.
const arity = 4

// node is one queued item as the heap holds it.
type node[T any] struct {
	at   int64  // deadline: nanoseconds since the queue's base, monotonic
	seq  uint32 // offer order, breaks ties between equal deadlines
	slot uint32 // index into heap.slots: the item's identity for handles
	v    T
}

// slotEntry maps a stable item identity to the item's current position.
//
// While the slot is live, pos is the node's index in heap.nodes. While it is
// free, pos is the index of the next free slot (noSlot ends the list).
// gen changes each time the slot is freed, so a handle taken before that no
// longer matches: that is what makes stale handles harmless.
type slotEntry struct {
	pos uint32
	gen uint32
}

const noSlot = math.MaxUint32

// heap is an array-backed 4-ary min-heap of nodes ordered by (at, seq), with
// position tracking so that any item can be removed or moved in O(log n).
//
// The invariant, for every 0 < i < len(nodes):
//
//	!less(nodes[i], nodes[(i-1)/arity])
//
// and, for every node at index i, slots[nodes[i].slot].pos == i.
//
// The zero heap is empty and ready to use. It is not safe for concurrent use:
// the Queue guards it with its mutex.
type heap[T any] struct {
	nodes    []node[T]
	slots    []slotEntry
	freeSlot uint32 // head of the free slot list, noSlot if none
	nextSeq  uint32 // seq for the next push or fix
	inited   bool
	// onRemove, if set, sees every node as it leaves the heap, whichever
	// way it leaves; Keyed uses it to drop the value's key (and recurring
	// schedule) in step.
	onRemove func(n *node[T])
}

func (h *heap[T]) len() int { return len(h.nodes) }

// less orders by deadline, then by offer order.
func less[T any](a, b *node[T]) bool {
	return a.at < b.at || (a.at == b.at && a.seq < b.seq)
}

// compareNodes orders nodes as less does, for slices.SortFunc.
func compareNodes[T any](a, b node[T]) int {
	switch {
	case less(&a, &b):
		return -1
	case less(&b, &a):
		return 1
	}
	return 0
}

// takeSeq returns the next sequence number, renumbering the live nodes
// first when the 32-bit counter is exhausted. Renumbering keeps every live
// seq below len(nodes), so plain comparison stays correct forever; it costs
// O(n log n) once every 2^32-n pushes.
func (h *heap[T]) takeSeq() uint32 {
	if h.nextSeq == math.MaxUint32 {
		h.renumber()
	}
	s := h.nextSeq
	h.nextSeq++
	return s
}

// renumber sorts the nodes into delivery order (a sorted array is a valid
// heap), gives them the sequence numbers 0..n-1 and fixes their positions.
func (h *heap[T]) renumber() {
	slices.SortFunc(h.nodes, compareNodes[T])
	for i := range h.nodes {
		h.nodes[i].seq = uint32(i)
		h.slots[h.nodes[i].slot].pos = uint32(i)
	}
	h.nextSeq = uint32(len(h.nodes))
}

// allocSlot returns a free slot, growing the slot table if none is free.
func (h *heap[T]) allocSlot() uint32 {
	if !h.inited {
		h.freeSlot = noSlot
		h.inited = true
	}
	if s := h.freeSlot; s != noSlot {
		h.freeSlot = h.slots[s].pos
		return s
	}
	if uint64(len(h.slots)) >= math.MaxUint32-1 {
		panic("delayqueue: more than 2^32-2 items queued")
	}
	h.slots = append(h.slots, slotEntry{gen: 1})
	return uint32(len(h.slots) - 1)
}

// freeSlotOf returns slot s to the free list and invalidates its handles.
func (h *heap[T]) freeSlotOf(s uint32) {
	e := &h.slots[s]
	e.gen++
	if e.gen == 0 { // 0 is the zero Handle's generation: never live
		e.gen = 1
	}
	e.pos = h.freeSlot
	h.freeSlot = s
}

// push adds v with deadline at and returns its slot and generation.
// The complexity is O(log n) where n = h.len().
func (h *heap[T]) push(v T, at int64) (slot, gen uint32) {
	slot = h.allocSlot()
	i := len(h.nodes)
	h.nodes = append(h.nodes, node[T]{at: at, seq: h.takeSeq(), slot: slot, v: v})
	h.siftUp(i)
	return slot, h.slots[slot].gen
}

// head returns the minimum node. The heap must not be empty.
func (h *heap[T]) head() *node[T] { return &h.nodes[0] }

// pop removes and returns the minimum value. The heap must not be empty.
// The complexity is O(log n) where n = h.len().
func (h *heap[T]) pop() T {
	return h.removeAt(0)
}

// lookup returns the index of the live item with the given slot and
// generation, or -1 if the handle is stale or never was.
func (h *heap[T]) lookup(slot, gen uint32) int {
	if gen == 0 || int(slot) >= len(h.slots) {
		return -1
	}
	e := h.slots[slot]
	if e.gen != gen {
		return -1
	}
	return int(e.pos)
}

// removeAt removes and returns the value at index i, zeroing the vacated
// array slot so the GC does not see the value through the backing array.
// The complexity is O(log n) where n = h.len().
func (h *heap[T]) removeAt(i int) T {
	n := len(h.nodes) - 1
	if h.onRemove != nil {
		h.onRemove(&h.nodes[i])
	}
	v := h.nodes[i].v
	h.freeSlotOf(h.nodes[i].slot)
	if i != n {
		h.nodes[i] = h.nodes[n]
		h.slots[h.nodes[i].slot].pos = uint32(i)
	}
	h.nodes[n] = node[T]{}
	h.nodes = h.nodes[:n]
	if i != n {
		if !h.siftDown(i) {
			h.siftUp(i)
		}
	}
	return v
}

// fix gives the node at index i the deadline at and a fresh sequence number
// (it counts as newly offered for ties), then restores the heap order.
// The complexity is O(log n) where n = h.len().
func (h *heap[T]) fix(i int, at int64) {
	slot := h.nodes[i].slot
	seq := h.takeSeq()
	// takeSeq may have renumbered, moving the node; find it again.
	i = int(h.slots[slot].pos)
	h.nodes[i].at = at
	h.nodes[i].seq = seq
	if !h.siftDown(i) {
		h.siftUp(i)
	}
}

// siftUp moves the node at index j towards the root until its parent is not
// greater. It moves nodes into a hole rather than swapping, so each level
// costs one node copy and one position update.
func (h *heap[T]) siftUp(j int) {
	nodes := h.nodes
	x := nodes[j]
	for j > 0 {
		p := (j - 1) / arity
		if !less(&x, &nodes[p]) {
			break
		}
		nodes[j] = nodes[p]
		h.slots[nodes[j].slot].pos = uint32(j)
		j = p
	}
	nodes[j] = x
	h.slots[x.slot].pos = uint32(j)
}

// siftDown moves the node at index i0 away from the root until no child is
// smaller, and reports whether it moved.
func (h *heap[T]) siftDown(i0 int) bool {
	nodes := h.nodes
	n := len(nodes)
	x := nodes[i0]
	i := i0
	for {
		c := arity*i + 1
		if c >= n {
			break
		}
		// The smallest of up to arity children.
		m := c
		end := min(c+arity, n)
		for k := c + 1; k < end; k++ {
			if less(&nodes[k], &nodes[m]) {
				m = k
			}
		}
		if !less(&nodes[m], &x) {
			break
		}
		nodes[i] = nodes[m]
		h.slots[nodes[i].slot].pos = uint32(i)
		i = m
	}
	if i == i0 {
		return false
	}
	nodes[i] = x
	h.slots[x.slot].pos = uint32(i)
	return true
}
