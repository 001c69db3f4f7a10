package delayqueue

import (
	"fmt"
	"time"
)

// This file exports test-only hooks into Keyed's key index.

// KeyedIndexLen returns the number of keys in k's index.
func KeyedIndexLen[K comparable, V any](k *Keyed[K, V]) int {
	k.q.mu.Lock()
	defer k.q.mu.Unlock()
	return len(k.keys)
}

// CheckKeyed checks the heap invariants and that the key index maps
// exactly the queued keys to their items.
func CheckKeyed[K comparable, V any](k *Keyed[K, V]) error {
	if err := CheckQueue(k.q); err != nil {
		return err
	}
	k.q.mu.Lock()
	defer k.q.mu.Unlock()
	h := &k.q.heap
	if len(k.keys) != h.len() {
		return fmt.Errorf("index holds %d keys, heap %d items", len(k.keys), h.len())
	}
	for key, slot := range k.keys {
		if int(slot) >= len(h.slots) {
			return fmt.Errorf("key %v: slot %d out of range", key, slot)
		}
		i := int(h.slots[slot].pos)
		if i >= h.len() || h.nodes[i].slot != slot || h.nodes[i].v.Key != key {
			return fmt.Errorf("key %v: slot %d does not hold its item", key, slot)
		}
	}
	return nil
}

// KeyedCancelThenSchedule cancels cancelKey and schedules key, v at at under
// one acquisition of the lock, so that no call (a Put the cancel woke for
// room) can run between the two.
func KeyedCancelThenSchedule[K comparable, V any](k *Keyed[K, V], cancelKey, key K, v V, at time.Time) (replaced bool, err error) {
	q := k.q
	t := q.tick(at)
	q.mu.Lock()
	defer q.mu.Unlock()
	if i := k.indexLocked(cancelKey); i >= 0 {
		q.removeLocked(i)
	}
	return k.upsertLocked(key, v, t, true)
}
