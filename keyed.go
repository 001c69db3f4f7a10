package delayqueue

import (
	"context"
	"fmt"
	"iter"
	"reflect"
	"slices"
	"time"
)

// Item is a key and its value, as Keyed hands them out in batches.
type Item[K comparable, V any] struct {
	Key   K
	Value V
}

// KeyedEntry is a queued key with its value and deadline, as Keyed's
// Snapshot, DrainEntries and Shutdown return them, and as TakeEntry hands
// one out. Deadline is as in Entry; for a recurring key it is the time of
// the occurrence queued (or handed out). Restore queues an entry again.
//
// Schedule and CatchUp are a recurring key's schedule and CatchUp option
// (nil and 0 for other keys), so that Restore resumes the series where it
// was. A Schedule is an interface value: encoding/json writes an Interval
// but cannot read it back into the interface, and cannot encode a
// ScheduleFunc at all. To save recurring keys across a restart, save your
// own record of each one's schedule (its cron spec, an Interval's Period
// and Phase, or just which of your program's schedules it is) next to the
// entry, and set Schedule from it before Restore (see ExampleKeyed_Restore).
// Both fields are omitted from JSON when unset, so one-shot entries encode
// as before.
type KeyedEntry[K comparable, V any] struct {
	Key      K
	Value    V
	Deadline time.Time
	Schedule Schedule `json:",omitempty"`
	CatchUp  int      `json:",omitempty"`
}

// Keyed is a delay queue of values of type V identified by keys of type K:
// at most one item per key is queued at any time, and items are scheduled,
// moved, looked up and cancelled by key, without handles.
//
// It is a Queue of Items with an index from keys to heap positions, kept
// under the Queue's mutex: the same heap, the same Leader-Follower
// hand-off of blocked takers, the same deadline order (equal deadlines in
// the order they were scheduled), clock, Options, Stats and guarantees.
// Every key operation is O(log n) and atomic with respect to takers: once a
// Take hands out a key, Cancel, Reschedule, Deadline and Get report it
// absent and Schedule inserts it anew. A key is in the index exactly while
// its item is queued, so the index never outgrows the queue.
//
// A key can be recurring (ScheduleRecurring): handing out one occurrence
// queues the next under the same lock, so a recurring key is never absent
// between occurrences, and Cancel, Reschedule, Get and Schedule right after
// a Take find its next occurrence.
//
// A Keyed must be created with NewKeyed; its methods panic on the zero
// Keyed. It is safe for concurrent use by multiple goroutines.
type Keyed[K comparable, V any] struct {
	q *Queue[Item[K, V]]
	// keys maps each queued key to its heap slot; guarded by q.mu.
	// heap.onRemove deletes a key whenever its item leaves, by any path.
	keys map[K]uint32
	// putting holds the key of each Put blocked for room, by its waiter, so
	// that inserting that key wakes it to replace instead; guarded by q.mu.
	putting map[*waiter]K
	// checkKeys: K can hold a key that breaks a map index (a NaN, or behind
	// an interface an uncomparable type); see keyFor.
	checkKeys bool
	// rec holds the series of each recurring key by its heap slot (nil for
	// other slots; it grows only as far as recurring keys' slots), and
	// nrec counts the series; guarded by q.mu. A recurring key keeps its
	// node, and so its slot, from one occurrence to the next; heap.onRemove
	// drops the series whenever the node leaves. See recurring.go.
	rec  []*series
	nrec int
}

// NewKeyed returns an empty, open keyed queue configured by opts, which
// mean what they mean for New. A bounded Keyed (WithCapacity) refuses or
// blocks new keys when full, never the replacement of a queued key.
func NewKeyed[K comparable, V any](opts ...Option) *Keyed[K, V] {
	k := &Keyed[K, V]{
		q:         New[Item[K, V]](opts...),
		keys:      make(map[K]uint32),
		putting:   make(map[*waiter]K),
		checkKeys: keyNeedsCheck(reflect.TypeFor[K]()),
	}
	k.q.heap.onRemove = func(n *node[Item[K, V]]) {
		delete(k.keys, n.v.Key)
		if k.nrec > 0 {
			k.dropSeriesLocked(n.slot)
		}
	}
	return k
}

// queue returns the underlying Queue, failing fast on the zero Keyed.
func (k *Keyed[K, V]) queue() *Queue[Item[K, V]] {
	if k.q == nil {
		panic("delayqueue: Keyed used without NewKeyed")
	}
	return k.q
}

// queueFor is queue for a method given key: it also fails fast, before
// taking the lock, on a key that cannot index the queue. A key not equal
// to itself (a NaN, or a struct, array or interface holding one) would be
// inserted anew by every Schedule and never leave the index; an interface
// holding an uncomparable type (a slice, map or func) panics in any
// comparison.
func (k *Keyed[K, V]) queueFor(key K) *Queue[Item[K, V]] {
	q := k.queue()
	if k.checkKeys && !selfEqual(key) {
		panic(fmt.Sprintf("delayqueue: Keyed key %v is not equal to itself (a NaN?)", key))
	}
	return q
}

// selfEqual reports whether key == key, turning the runtime's panic for an
// uncomparable dynamic type into a delayqueue: one.
func selfEqual[K comparable](key K) bool {
	defer func() {
		if r := recover(); r != nil {
			panic(fmt.Sprintf("delayqueue: Keyed key of type %T cannot be compared: %v", key, r))
		}
	}()
	return key == key
}

// keyNeedsCheck reports whether keys of type t can be unequal to themselves
// or uncomparable: floats and complex numbers (NaN), interfaces, and arrays
// and structs holding either. Strings, integers, pointers and the like
// cannot, and their keys are not checked.
func keyNeedsCheck(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128, reflect.Interface:
		return true
	case reflect.Array:
		return keyNeedsCheck(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if keyNeedsCheck(t.Field(i).Type) {
				return true
			}
		}
	}
	return false
}

// Schedule queues v under key with deadline at. If key is already queued it
// replaces the item's value and deadline (for equal deadlines the item
// counts as newly scheduled) and returns replaced == true; otherwise it
// inserts the item. A recurring key replaced by Schedule (or Put) becomes
// a one-shot item: its series ends. It never blocks. It returns ErrClosed
// after Close or Shutdown, and ErrFull if it would insert into a bounded
// queue that is full; replacing never fails with ErrFull.
// The complexity is O(log n) where n = k.Len().
func (k *Keyed[K, V]) Schedule(key K, v V, at time.Time) (replaced bool, err error) {
	q := k.queueFor(key)
	t := q.tick(at)
	q.mu.Lock()
	replaced, err = k.upsertLocked(key, v, t, true)
	q.mu.Unlock()
	return replaced, err
}

// ScheduleAfter is Schedule(key, v, time.Now().Add(d)).
func (k *Keyed[K, V]) ScheduleAfter(key K, v V, d time.Duration) (replaced bool, err error) {
	return k.Schedule(key, v, time.Now().Add(d))
}

// Add queues v under key with deadline at only if key is not queued, and
// reports whether it did; a queued key keeps its value and deadline. Errors
// are as for Schedule.
// The complexity is O(log n) where n = k.Len().
func (k *Keyed[K, V]) Add(key K, v V, at time.Time) (added bool, err error) {
	q := k.queueFor(key)
	t := q.tick(at)
	q.mu.Lock()
	found, err := k.upsertLocked(key, v, t, false)
	q.mu.Unlock()
	return !found && err == nil, err
}

// Put is Schedule that blocks, while a bounded queue is full, until there
// is room to insert key (or key was inserted by someone else meanwhile, and
// Put replaces it). Errors are as for Queue.Put.
func (k *Keyed[K, V]) Put(ctx context.Context, key K, v V, at time.Time) (replaced bool, err error) {
	q := k.queueFor(key)
	if err := ctx.Err(); err != nil {
		return false, err
	}
	t := q.tick(at)
	q.mu.Lock()
	defer q.mu.Unlock()
	for {
		replaced, err = k.upsertLocked(key, v, t, true)
		if err != ErrFull {
			return replaced, err
		}
		w := q.getWaiterLocked()
		k.putting[w] = key
		err = q.awaitRoomAsLocked(ctx, w)
		delete(k.putting, w)
		if err != nil {
			return false, err
		}
	}
}

// upsertLocked inserts key, or finds it queued and then, if replace is set,
// gives it value v and deadline t. It reports whether key was found.
func (k *Keyed[K, V]) upsertLocked(key K, v V, t int64, replace bool) (found bool, err error) {
	q := k.q
	if q.closed || q.stopping {
		return false, ErrClosed
	}
	if slot, ok := k.keys[key]; ok {
		if replace {
			if k.nrec > 0 {
				k.dropSeriesLocked(slot) // a one-shot item replaces a series
			}
			i := int(q.heap.slots[slot].pos)
			q.heap.nodes[i].v.Value = v
			q.rescheduleLocked(i, t)
		}
		return true, nil
	}
	h, err := q.offerLocked(Item[K, V]{Key: key, Value: v}, t)
	if err != nil {
		return false, err
	}
	k.keys[key] = h.slot
	if len(k.putting) > 0 {
		k.wakePutsForLocked(key)
	}
	return false, nil
}

// wakePutsForLocked wakes the Puts blocked for room to insert key, which is
// now queued: they can replace it without room.
func (k *Keyed[K, V]) wakePutsForLocked(key K) {
	for w, wk := range k.putting {
		if wk == key && w.list != nil {
			w.list.remove(w)
			w.signal()
		}
	}
}

// indexLocked returns the heap index of key's item, or -1 if key is not
// queued.
func (k *Keyed[K, V]) indexLocked(key K) int {
	slot, ok := k.keys[key]
	if !ok {
		return -1
	}
	return int(k.q.heap.slots[slot].pos)
}

// Cancel removes key's item and returns its value. It returns false if key
// is not queued. It wakes no blocked taker. Cancelling a recurring key
// ends its series.
// The complexity is O(log n) where n = k.Len().
func (k *Keyed[K, V]) Cancel(key K) (V, bool) {
	q := k.queueFor(key)
	q.mu.Lock()
	defer q.mu.Unlock()
	i := k.indexLocked(key)
	if i < 0 {
		var zero V
		return zero, false
	}
	return q.removeLocked(i).Value, true
}

// Reschedule gives key's item the deadline at, keeping its value; for ties
// it counts as newly scheduled. It returns false if key is not queued. It
// wakes a blocked taker only if the item becomes a head earlier than the
// old one. For a recurring key it moves the occurrence queued, and the
// series goes on from it.
// The complexity is O(log n) where n = k.Len().
func (k *Keyed[K, V]) Reschedule(key K, at time.Time) bool {
	q := k.queueFor(key)
	t := q.tick(at)
	q.mu.Lock()
	defer q.mu.Unlock()
	i := k.indexLocked(key)
	if i < 0 {
		return false
	}
	q.rescheduleLocked(i, t)
	return true
}

// Get returns key's value and deadline (as Peek returns a deadline), or
// ok == false if key is not queued. For a recurring key the deadline is
// the occurrence queued: right after a hand-out, the next one.
func (k *Keyed[K, V]) Get(key K) (v V, at time.Time, ok bool) {
	q := k.queueFor(key)
	q.mu.Lock()
	defer q.mu.Unlock()
	i := k.indexLocked(key)
	if i < 0 {
		return v, at, false
	}
	n := &q.heap.nodes[i]
	return n.v.Value, q.deadlineOf(n.at), true
}

// Deadline returns key's deadline, or false if key is not queued.
func (k *Keyed[K, V]) Deadline(key K) (time.Time, bool) {
	_, at, ok := k.Get(key)
	return at, ok
}

// Contains reports whether key is queued.
func (k *Keyed[K, V]) Contains(key K) bool {
	q := k.queueFor(key)
	q.mu.Lock()
	defer q.mu.Unlock()
	_, ok := k.keys[key]
	return ok
}

// Take removes the head once it is due, blocking until then, and returns
// its key and value. Errors are as for Queue.Take. The head can be an
// occurrence of a recurring key: the key then stays queued for its next
// occurrence (see ScheduleRecurring); TakeEntry also tells which
// occurrence it was. All the methods that hand items out (Take, TakeEntry,
// TakeBatch, Poll, DrainExpired, Consume) treat recurring keys alike.
func (k *Keyed[K, V]) Take(ctx context.Context) (K, V, error) {
	it, err := k.queue().Take(ctx)
	return it.Key, it.Value, err
}

// TakeEntry is Take returning the item's deadline too, and for an
// occurrence of a recurring key its Schedule and CatchUp: Deadline is
// then the time of the occurrence handed out, which a consumer can use to
// tell occurrences apart (say, as the day of a daily digest) or to see how
// many it missed. It allocates nothing.
func (k *Keyed[K, V]) TakeEntry(ctx context.Context) (KeyedEntry[K, V], error) {
	q := k.queue()
	var e KeyedEntry[K, V]
	it, err := q.take(ctx, func(h *node[Item[K, V]]) {
		e.Deadline = q.deadlineOf(h.at)
		if k.nrec > 0 {
			if s := k.seriesLocked(h.slot); s != nil {
				e.Schedule, e.CatchUp = s.sched, s.catchUp
			}
		}
	})
	if err != nil {
		return KeyedEntry[K, V]{}, err
	}
	e.Key, e.Value = it.Key, it.Value
	return e, nil
}

// TakeBatch is Queue.TakeBatch: it blocks until at least one item is due,
// then appends up to max due items (all if max <= 0) to dst.
func (k *Keyed[K, V]) TakeBatch(ctx context.Context, dst []Item[K, V], max int) ([]Item[K, V], error) {
	return k.queue().TakeBatch(ctx, dst, max)
}

// Poll removes and returns the head if it is due. It never blocks.
func (k *Keyed[K, V]) Poll() (key K, v V, ok bool) {
	it, ok := k.queue().Poll()
	return it.Key, it.Value, ok
}

// DrainExpired appends up to max due items (all if max <= 0) to dst in
// delivery order and returns the extended slice. It never blocks.
func (k *Keyed[K, V]) DrainExpired(dst []Item[K, V], max int) []Item[K, V] {
	return k.queue().DrainExpired(dst, max)
}

// Peek returns the head, due or not, with its deadline, without removing
// it; ok is false if the queue is empty.
func (k *Keyed[K, V]) Peek() (key K, v V, at time.Time, ok bool) {
	it, at, ok := k.queue().Peek()
	return it.Key, it.Value, at, ok
}

// Consume returns an iterator over keys and values as Take returns them,
// ending as Queue.Consume does.
//
//	for key, v := range q.Consume(ctx) { handle(key, v) }
func (k *Keyed[K, V]) Consume(ctx context.Context) iter.Seq2[K, V] {
	q := k.queue()
	return func(yield func(K, V) bool) {
		for it := range q.Consume(ctx) {
			if !yield(it.Key, it.Value) {
				return
			}
		}
	}
}

// Len returns the number of keys queued, due or not.
func (k *Keyed[K, V]) Len() int { return k.queue().Len() }

// Stats returns a snapshot of the queue's counters.
func (k *Keyed[K, V]) Stats() Stats { return k.queue().Stats() }

// Close closes the queue as Queue.Close does. Schedule, Add and Put return
// ErrClosed afterwards; Cancel, Reschedule, Get and Drain keep working.
func (k *Keyed[K, V]) Close() { k.queue().Close() }

// Drain removes and returns every item, due or not, in delivery order; see
// DrainEntries for their deadlines (and recurring keys' schedules) too.
// Recurring keys' series end.
func (k *Keyed[K, V]) Drain() []Item[K, V] { return k.queue().Drain() }

// DrainEntries removes and returns every item with its deadline (and a
// recurring key's schedule), in delivery order; nil if the queue is empty.
// The recurring keys' series end here: Restore the entries to resume them.
func (k *Keyed[K, V]) DrainEntries() []KeyedEntry[K, V] {
	q := k.queue()
	q.mu.Lock()
	recs := k.seriesByKeyLocked()
	es := q.drainEntriesLocked()
	q.mu.Unlock()
	return keyedEntries(es, recs)
}

// Snapshot returns every queued item with its deadline (and a recurring
// key's schedule), in delivery order, without removing anything; see
// Queue.Snapshot. Restoring the entries with Restore, in this order, into
// an empty Keyed rebuilds the same schedule, recurring keys included.
func (k *Keyed[K, V]) Snapshot() []KeyedEntry[K, V] {
	q := k.queue()
	var rec []*series
	nodes := q.snapshotNodes(func() {
		if k.nrec > 0 {
			rec = slices.Clone(k.rec)
		}
	})
	if len(nodes) == 0 {
		return nil
	}
	out := make([]KeyedEntry[K, V], len(nodes))
	for i := range nodes {
		n := &nodes[i]
		out[i] = KeyedEntry[K, V]{Key: n.v.Key, Value: n.v.Value, Deadline: q.deadlineOf(n.at)}
		if int(n.slot) < len(rec) {
			if s := rec[n.slot]; s != nil {
				out[i].Schedule, out[i].CatchUp = s.sched, s.catchUp
			}
		}
	}
	return out
}

// Shutdown stops new keys and replacements, lets takers finish what is
// due, then closes the queue and returns what is left; see Queue.Shutdown.
// Takers keep getting recurring keys' occurrences as they fall due, each
// queuing the next, so the entries returned hold every recurring key with
// its next occurrence and schedule, for Restore on the next start.
func (k *Keyed[K, V]) Shutdown(ctx context.Context) ([]KeyedEntry[K, V], error) {
	var recs map[K]*series
	rest, err := k.queue().shutdown(ctx, func() { recs = k.seriesByKeyLocked() })
	return keyedEntries(rest, recs), err
}

// keyedEntries turns drained entries into KeyedEntries, with the series of
// the recurring keys among them from recs (nil if none).
func keyedEntries[K comparable, V any](es []Entry[Item[K, V]], recs map[K]*series) []KeyedEntry[K, V] {
	if es == nil {
		return nil
	}
	out := make([]KeyedEntry[K, V], len(es))
	for i, e := range es {
		out[i] = KeyedEntry[K, V]{Key: e.Value.Key, Value: e.Value.Value, Deadline: e.Deadline}
		if recs != nil {
			if s := recs[e.Value.Key]; s != nil {
				out[i].Schedule, out[i].CatchUp = s.sched, s.catchUp
			}
		}
	}
	return out
}
