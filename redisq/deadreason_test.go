package redisq

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Issue 24, item 15: dead letters by cause, grouped, listed by group and
// acted on by group.
func TestDeadLettersByReason(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "dead")
	ctx := context.Background()
	hostile := "bad\xff\u202ereason"
	killAllWhy(t, q, "a", 3, "timeout")
	killAllWhy(t, q, "h", 1, hostile)
	killAllWhy(t, q, "b", 2, "bad input")

	sum, err := q.DeadReasons(ctx, 0)
	require.NoError(t, err)
	require.True(t, sum.Complete())
	require.EqualValues(t, 6, sum.Dead)
	require.EqualValues(t, 6, sum.Examined)
	var got []string
	var counts []int64
	for _, r := range sum.Reasons {
		got, counts = append(got, r.Reason), append(counts, r.Count)
		require.False(t, r.Last.Before(r.First))
	}
	require.Equal(t, []string{"timeout", "bad input", hostile}, got, "most frequent first")
	require.Equal(t, []int64{3, 2, 1}, counts)

	part, err := q.DeadReasons(ctx, 4)
	require.NoError(t, err)
	require.False(t, part.Complete())
	require.EqualValues(t, 4, part.Examined)
	require.Equal(t, "timeout", part.Reasons[0].Reason)

	page, err := q.List(ctx, StateDead, ListOptions{Reason: "bad input"})
	require.NoError(t, err)
	require.Len(t, page.Items, 2)
	for _, it := range page.Items {
		require.Equal(t, "bad input", it.DeadReason)
	}
	require.EqualValues(t, -1, page.Next)
	page, err = q.List(ctx, StateDead, ListOptions{Reason: hostile})
	require.NoError(t, err)
	require.Len(t, page.Items, 1)
	require.Equal(t, "h0000", page.Items[0].ID)
	_, err = q.List(ctx, StateScheduled, ListOptions{Reason: "x"})
	require.Error(t, err)

	n, err := q.RequeueDeadByReason(ctx, "timeout")
	require.NoError(t, err)
	require.EqualValues(t, 3, n)
	n, err = q.DeleteDeadByReason(ctx, hostile)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	st, err := q.Stats(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 2, st.Dead, "only the other group is left dead")
	require.EqualValues(t, 3, st.Scheduled)
	require.EqualValues(t, 3, st.Requeued)
	_, err = q.RequeueDeadByReason(ctx, "")
	require.Error(t, err)
	audit(t, q)
}

// A filtered page examines a bounded number of dead items: a group behind
// many others is reached page by page, each item once, in order.
func TestListDeadByReasonPagesPastOthers(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "deadpages")
	p := newPartitioned(t, c, "deadparts", 3)
	ctx := context.Background()
	for _, x := range []interface {
		EnqueueAfter(context.Context, string, []byte, time.Duration) (time.Time, error)
		TakeBatch(context.Context, int) ([]*Message, error)
	}{q, p} {
		killAllWhy(t, x, "x", 1500, "noise")
		killAllWhy(t, x, "y", 5, "rare")
	}

	var ids []string
	opt := ListOptions{Reason: "rare", Limit: 3}
	pages := 0
	for {
		page, err := q.List(ctx, StateDead, opt)
		require.NoError(t, err)
		pages++
		for _, it := range page.Items {
			ids = append(ids, it.ID)
		}
		if page.Next < 0 {
			break
		}
		opt.Offset = page.Next
	}
	require.Equal(t, []string{"y0000", "y0001", "y0002", "y0003", "y0004"}, ids)
	require.GreaterOrEqual(t, pages, 3, "at most MaxPage examined per page")

	ids = nil
	popt := PartitionedListOptions{Reason: "rare", Limit: 2}
	for range 100 {
		page, err := p.List(ctx, StateDead, popt)
		require.NoError(t, err)
		for _, it := range page.Items {
			ids = append(ids, it.ID)
		}
		if page.Next == nil {
			break
		}
		popt.Cursor = page.Next
	}
	require.ElementsMatch(t, []string{"y0000", "y0001", "y0002", "y0003", "y0004"}, ids, "each once, across partitions")
	sum, err := p.DeadReasons(ctx, 0)
	require.NoError(t, err)
	require.EqualValues(t, 1505, sum.Dead)
	require.Len(t, sum.Reasons, 2)
	require.Equal(t, DeadReason{Reason: "noise", Count: 1500, First: sum.Reasons[0].First, Last: sum.Reasons[0].Last}, sum.Reasons[0])
	n, err := p.DeleteDeadByReason(ctx, "noise")
	require.NoError(t, err)
	require.EqualValues(t, 1500, n)
}
