package delayqueue_test

import (
	"encoding/json"
	"testing"
	"testing/synctest"
	"time"

	dq "github.com/dq-go/delayqueue"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Snapshot lists every item in delivery order (ties in offer order,
// rescheduled items as newly offered) with its deadline, and changes
// nothing.
func TestSnapshotDeliveryOrderNonDestructive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := dq.New[string]()
		assert.Nil(t, q.Snapshot())
		now := time.Now()
		offer(t, q, "b1", now.Add(2*time.Second))
		h := offer(t, q, "a", now.Add(3*time.Second))
		offer(t, q, "b2", now.Add(2*time.Second))
		offer(t, q, "past", time.Time{})
		require.True(t, q.Reschedule(h, now.Add(2*time.Second))) // ties with b1, b2; after them
		before := q.Stats()

		snap := q.Snapshot()
		want := []string{"past", "b1", "b2", "a"}
		assert.Equal(t, want, values(snap))
		for _, e := range snap[1:] {
			assert.True(t, e.Deadline.Equal(now.Add(2*time.Second)), "%s: %v", e.Value, e.Deadline)
		}
		assert.Equal(t, before, q.Stats(), "Snapshot changes nothing")
		assert.Equal(t, want, pollAllAt(q, now.Add(time.Hour)), "delivery order is the snapshot's")
	})
}

// pollAllAt sleeps until t and polls everything.
func pollAllAt[T any](q *dq.Queue[T], t time.Time) []T {
	time.Sleep(time.Until(t))
	return pollAll(q)
}

// Offering a snapshot's entries in order to a new queue rebuilds the same
// schedule, ties included; through JSON (wall clock only) as well.
func TestSnapshotRestoreRebuildsSchedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := dq.New[int]()
		now := time.Now()
		for i := range 20 {
			offer(t, q, i, now.Add(time.Duration(i%4)*time.Second))
		}
		snap := q.Snapshot()
		data, err := json.Marshal(snap)
		require.NoError(t, err)
		var restored []dq.Entry[int]
		require.NoError(t, json.Unmarshal(data, &restored))

		time.Sleep(time.Second / 2) // the "restart" takes a while
		for _, es := range [][]dq.Entry[int]{snap, restored} {
			r := dq.New[int]()
			for _, e := range es {
				offer(t, r, e.Value, e.Deadline)
			}
			got := r.Snapshot()
			require.Len(t, got, len(snap))
			for i := range got {
				assert.Equal(t, snap[i].Value, got[i].Value)
				assert.True(t, snap[i].Deadline.Equal(got[i].Deadline), "entry %d: %v != %v", i, got[i].Deadline, snap[i].Deadline)
			}
		}
		assert.Equal(t, values(snap), values(q.DrainEntries()))
	})
}

// DrainEntries removes everything with its deadline, counts it as Drained
// and wakes blocked Puts, as Drain does.
func TestDrainEntries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := dq.New[int](dq.WithCapacity(2))
		now := time.Now()
		offer(t, q, 2, now.Add(time.Hour))
		offer(t, q, 1, now.Add(time.Minute))
		p := goPut(t.Context(), q, 3, now)
		synctest.Wait()
		es := q.DrainEntries()
		require.Len(t, es, 2)
		assert.Equal(t, 1, es[0].Value)
		assert.True(t, es[0].Deadline.Equal(now.Add(time.Minute)))
		assert.True(t, es[1].Deadline.Equal(now.Add(time.Hour)))
		r := <-p
		require.NoError(t, r.err, "the blocked Put got the room")
		assert.Equal(t, uint64(2), q.Stats().Drained)
		assert.Equal(t, []int{3}, values(q.DrainEntries()))
		assert.Nil(t, q.DrainEntries())
	})
}

// Deadline reports a live handle's deadline, and false for every handle
// Remove would refuse.
func TestDeadlineByHandle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q, other := dq.New[int](), dq.New[int]()
		at := time.Now().Add(time.Minute)
		h := offer(t, q, 1, at)
		got, ok := q.Deadline(h)
		require.True(t, ok)
		assert.True(t, got.Equal(at))
		require.True(t, q.Reschedule(h, at.Add(time.Second)))
		got, _ = q.Deadline(h)
		assert.True(t, got.Equal(at.Add(time.Second)))

		foreign := offer(t, other, 1, at)
		for _, bad := range []dq.Handle{{}, foreign} {
			_, ok := q.Deadline(bad)
			assert.False(t, ok)
		}
		q.Remove(h)
		_, ok = q.Deadline(h)
		assert.False(t, ok, "a handle whose item left")
		h2 := offer(t, q, 2, at) // reuses the slot
		_, ok = q.Deadline(h)
		assert.False(t, ok, "a stale handle does not see the slot's new item")
		_, ok = q.Deadline(h2)
		assert.True(t, ok)
	})
}
