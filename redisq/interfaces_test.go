package redisq

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// anyQueue is an ordinary or a partitioned queue, through what they share.
type anyQueue interface {
	Producer
	Consumer
	Admin
}

// One table test, run against a Queue and a Partitioned: what the tools do
// through Producer, Consumer and Admin means the same on both.
func TestQueueAndPartitionedShareTheirInterfaces(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	for _, kind := range []struct {
		name string
		open func(t *testing.T) anyQueue
	}{
		{"queue", func(t *testing.T) anyQueue { return newQueue(t, c, "iface") }},
		{"partitioned", func(t *testing.T) anyQueue { return newPartitioned(t, c, "ifacep", 3) }},
	} {
		t.Run(kind.name, func(t *testing.T) {
			ctx := context.Background()
			q := kind.open(t)
			now := redisNow(t, c)
			ids := make([]string, 6)
			for i := range ids {
				ids[i] = fmt.Sprint("i", i)
				require.NoError(t, q.Enqueue(ctx, ids[i], []byte(ids[i]), now.Add(time.Duration(i-10)*time.Millisecond)))
			}
			_, err := q.EnqueueAfter(ctx, "later", []byte("l"), time.Hour)
			require.NoError(t, err)
			require.ErrorIs(t, q.Enqueue(ctx, "later", nil, now), ErrDuplicate)

			st, err := q.Stats(ctx)
			require.NoError(t, err)
			require.EqualValues(t, 7, st.Scheduled)
			require.EqualValues(t, 6, st.DueBacklog)
			require.EqualValues(t, 7, st.Enqueued)
			ok, err := q.Exists(ctx)
			require.NoError(t, err)
			require.True(t, ok)

			it, err := q.Get(ctx, "i0")
			require.NoError(t, err)
			require.Equal(t, StateScheduled, it.State)
			require.Equal(t, "i0", string(it.Payload))
			run, err := q.RunNow(ctx, "i0")
			require.NoError(t, err)
			require.Equal(t, RunNowAlreadyDue, run.Outcome)
			run, err = q.RunNow(ctx, "later")
			require.NoError(t, err)
			require.Equal(t, RunNowMoved, run.Outcome)

			out, err := q.Cancel(ctx, "i5")
			require.NoError(t, err)
			require.Equal(t, CancelRemoved, out)

			// Take what is due (in due order, the moved one last) and kill
			// two of them with two reasons, ack the rest.
			tctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			var got []string
			for len(got) < 6 {
				ms, err := q.TakeBatch(tctx, 6-len(got))
				require.NoError(t, err)
				for _, m := range ms {
					got = append(got, m.ID)
					switch m.ID {
					case "i1", "i2":
						_, err := m.DeadLetter(ctx, "bad "+m.ID)
						require.NoError(t, err)
					default:
						require.NoError(t, q.AckMany(ctx, []*Message{m})[0])
					}
				}
			}
			require.Contains(t, got, "later", "made due now")
			if kind.name == "queue" { // a partitioned queue's order across partitions is looser (see Partitioned.Take)
				require.Equal(t, "later", got[len(got)-1], "behind the overdue ones: %v", got)
			}

			sum, err := q.DeadReasons(ctx, 0)
			require.NoError(t, err)
			require.EqualValues(t, 2, sum.Dead)
			require.Len(t, sum.Reasons, 2)
			dead, err := q.DeadIDs(ctx, 10)
			require.NoError(t, err)
			require.ElementsMatch(t, []string{"i1", "i2"}, dead)
			if p, ok := q.(*Partitioned); ok {
				// Its takers claim ahead while a caller took within
				// partHold: let them stop, so that i1, requeued, stays due.
				eventually(t, 10*time.Second, "the takers idle", func() bool { return !p.tk.activeNow() })
			}
			n, err := q.RequeueDeadByReason(ctx, "bad i1")
			require.NoError(t, err)
			require.EqualValues(t, 1, n)
			require.NoError(t, q.DeleteDead(ctx, "i2"))

			require.NoError(t, q.Pause(ctx))
			paused, err := q.Paused(ctx)
			require.NoError(t, err)
			require.True(t, paused)
			require.NoError(t, q.Resume(ctx))
			eventually(t, 10*time.Second, "i1, requeued, is due", func() bool {
				h, err := q.DueHistogram(ctx, time.Second, 10)
				require.NoError(t, err)
				return h.Overdue == 1
			})
			ws, err := q.Workers(ctx)
			require.NoError(t, err)
			require.Empty(t, ws)

			n, err = q.Purge(ctx, StateScheduled)
			require.NoError(t, err)
			require.EqualValues(t, 1, n)
			rep, err := q.Audit(ctx)
			require.NoError(t, err)
			require.True(t, rep.OK(), "%v", rep.Problems)
			_, err = q.Destroy(ctx)
			require.NoError(t, err)
			ok, err = q.Exists(ctx)
			require.NoError(t, err)
			require.False(t, ok)
		})
	}
}
