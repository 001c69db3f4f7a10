package delayqueue_test

import (
	"testing"
	"testing/synctest"
	"time"

	dq "github.com/dq-go/delayqueue"
	"github.com/stretchr/testify/assert"
)

// Stats counts every way in and out (lateness: lateness_test.go).

func TestStatsCounters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := dq.New[int]()
		for i := range 10 {
			offer(t, q, i, time.Time{})
		}
		h := offer(t, q, 10, time.Now().Add(time.Hour))
		offer(t, q, 11, time.Now().Add(time.Hour))
		_, _ = q.Poll()
		_, _ = q.Take(t.Context())
		_, _ = q.TakeBatch(t.Context(), nil, 3)
		q.DrainExpired(nil, 2)
		q.DrainExpired(nil, 0)
		q.Remove(h)
		res := goTake(t.Context(), q)
		synctest.Wait()
		s := q.Stats()
		assert.Equal(t, s.Taken, s.Lateness.Count)
		s.Lateness = dq.Histogram{} // checked in lateness_test.go
		assert.Equal(t, dq.Stats{Len: 1, Waiting: 1, Offered: 12, Taken: 10, Removed: 1, Drained: 0, Wakeups: 0}, s)
		q.Close()
		assert.ErrorIs(t, (<-res).err, dq.ErrClosed)
		q.Drain()
		s = q.Stats()
		s.Lateness = dq.Histogram{}
		assert.Equal(t, dq.Stats{Len: 0, Waiting: 0, Offered: 12, Taken: 10, Removed: 1, Drained: 1, Wakeups: 1}, s)
	})
}
