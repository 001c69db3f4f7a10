package delayqueue_test

import (
	"context"
	"testing"
	"time"

	dq "github.com/dq-go/delayqueue"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Handles: the zero handle, a handle from another queue and a stale handle
// (its item gone, its slot reused) refer to nothing.

func TestZeroHandleRefersToNothing(t *testing.T) {
	q := dq.New[string]()
	h := offer(t, q, "a", time.Time{})
	assert.NotEqual(t, dq.Handle{}, h)

	_, ok := q.Remove(dq.Handle{})
	assert.False(t, ok)
	assert.False(t, q.Reschedule(dq.Handle{}, time.Now()))
	assert.Equal(t, 1, q.Len())

	// Handles are comparable: usable as map keys, equal only to themselves.
	h2 := offer(t, q, "b", time.Time{})
	m := map[dq.Handle]string{h: "a", h2: "b"}
	assert.Len(t, m, 2)
	assert.Equal(t, "a", m[h])
}

func TestHandleFromAnotherQueueRejected(t *testing.T) {
	q1 := dq.New[string]()
	q2 := dq.New[string]()
	h1 := offer(t, q1, "one", time.Time{})
	h2 := offer(t, q2, "two", time.Time{})
	// Both items sit in the first slot of their queue's table; only the
	// queue identity tells the handles apart.
	assert.NotEqual(t, h1, h2)

	_, ok := q2.Remove(h1)
	assert.False(t, ok, "q2 must reject a handle issued by q1")
	assert.False(t, q2.Reschedule(h1, time.Now().Add(time.Hour)))
	v, ok := q2.Poll()
	assert.True(t, ok, "q2's own item must still be there and due")
	assert.Equal(t, "two", v)

	v, ok = q1.Remove(h1)
	assert.True(t, ok)
	assert.Equal(t, "one", v)
}

func TestStaleHandleAfterSlotReuse(t *testing.T) {
	far := time.Now().Add(time.Hour)
	for _, leave := range []string{"Remove", "Poll", "Take", "TakeBatch", "DrainExpired", "Drain"} {
		t.Run(leave, func(t *testing.T) {
			q := dq.New[string]()
			old := offer(t, q, "old", time.Time{})
			switch leave {
			case "Remove":
				_, ok := q.Remove(old)
				require.True(t, ok)
			case "Poll":
				_, ok := q.Poll()
				require.True(t, ok)
			case "Take":
				_, err := q.Take(context.Background())
				require.NoError(t, err)
			case "TakeBatch":
				_, err := q.TakeBatch(context.Background(), nil, 0)
				require.NoError(t, err)
			case "DrainExpired":
				require.Len(t, q.DrainExpired(nil, 0), 1)
			case "Drain":
				require.Len(t, q.Drain(), 1)
			}
			// The new item reuses the freed slot.
			nw := offer(t, q, "new", far)
			assert.NotEqual(t, old, nw)

			_, ok := q.Remove(old)
			assert.False(t, ok, "stale handle must not remove the item now in its slot")
			assert.False(t, q.Reschedule(old, time.Time{}), "stale handle must not reschedule")
			_, ok = q.Poll()
			assert.False(t, ok, "the new item must keep its own deadline")
			assert.Equal(t, 1, q.Len())

			v, ok := q.Remove(nw)
			assert.True(t, ok)
			assert.Equal(t, "new", v)
			_, ok = q.Remove(nw)
			assert.False(t, ok, "a handle works once")
			checkAccounting(t, q)
		})
	}
}

func TestStaleHandleManyReuses(t *testing.T) {
	q := dq.New[int]()
	var stale []dq.Handle
	for i := range 100 {
		h := offer(t, q, i, time.Time{})
		live := offer(t, q, -i, time.Now().Add(time.Hour))
		for _, s := range stale {
			_, ok := q.Remove(s)
			require.False(t, ok)
		}
		_, ok := q.Remove(h)
		require.True(t, ok)
		stale = append(stale, h)
		_, ok = q.Remove(live)
		require.True(t, ok)
		stale = append(stale, live)
	}
	assert.Equal(t, 0, q.Len())
	checkAccounting(t, q)
}
