package redisq

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/dq-go/delayqueue/redisq/redistest"
	"github.com/stretchr/testify/require"
)

// TestClusterJobs: on a 3-master Cluster, jobs are stored and honoured,
// retained items complete with their results, through Ack, AckMany and
// a Worker's acks, before and after the queue's slot moves to another
// master (done, which the acks find while running, moves with it); a
// partitioned queue over the masters keeps jobs and results the same way.
func TestClusterJobs(t *testing.T) {
	noLeaks(t)
	c := redistest.NewClusterWith(t, redistest.ClusterOptions{Masters: 3})
	cc := clusterClient(t, c)
	ctx := context.Background()
	q := newQueue(t, cc, "cjobs", WithMaxAttempts(5), WithBackoff(time.Hour, time.Hour))
	keep := Job{Kind: "refund", Headers: map[string]string{"h": "v"}, MaxAttempts: 1, Retention: time.Hour}

	ackAll := func(q *Queue, n int, result string) {
		t.Helper()
		ms, err := q.TakeBatch(ctx, n)
		require.NoError(t, err)
		require.Len(t, ms, n)
		for _, m := range ms {
			requireJob(t, keep, m.Job, m.ID)
			require.NoError(t, m.SetResult([]byte(result+m.ID)))
		}
		require.NoError(t, ms[0].Ack(ctx))
		require.NoError(t, errors.Join(q.AckMany(ctx, ms[1:])...))
	}
	items := func(prefix string, n int) []EnqueueItem {
		its := make([]EnqueueItem, n)
		for i := range its {
			its[i] = EnqueueItem{ID: prefix + string(rune('a'+i)), Job: keep}
		}
		return its
	}
	_, err := q.EnqueueMany(ctx, items("x", 4))
	require.NoError(t, err)
	ackAll(q, 4, "r-")

	// The slot moves: the completed items, done and the job fields with it.
	src, err := c.MasterOf(ctx, q.db.Keys.Done)
	require.NoError(t, err)
	var dst *redistest.Server
	for _, s := range c.Servers[:3] {
		if s != src {
			dst = s
			break
		}
	}
	migrateSlot(t, c, q.db.Keys.Done, dst)
	_, err = q.EnqueueMany(ctx, items("y", 3))
	require.NoError(t, err)
	ackAll(q, 3, "s-")
	// An item's own max attempts (1, the queue's 5) on the new master.
	_, err = q.Add(ctx, EnqueueItem{ID: "once", Job: keep})
	require.NoError(t, err)
	m, err := q.Take(ctx)
	require.NoError(t, err)
	r, err := m.NackWith(ctx)
	require.NoError(t, err)
	require.Equal(t, NackDeadLettered, r.Outcome)

	st, err := q.Stats(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 7, st.Completed)
	p, err := q.List(ctx, StateCompleted, ListOptions{Payloads: true, Kind: "refund"})
	require.NoError(t, err)
	got := map[string]string{}
	for _, it := range p.Items {
		got[it.ID] = string(it.Result)
	}
	require.Equal(t, map[string]string{"xa": "r-xa", "xb": "r-xb", "xc": "r-xc", "xd": "r-xd",
		"ya": "s-ya", "yb": "s-yb", "yc": "s-yc"}, got)
	require.True(t, audit(t, q).OK())

	// A partitioned queue over the masters.
	pq, err := NewPartitioned(ctx, cc, "cjobsp", 3)
	require.NoError(t, err)
	t.Cleanup(func() { _ = pq.Close() })
	_, err = pq.EnqueueMany(ctx, items("p", 9))
	require.NoError(t, err)
	var ms []*Message
	for len(ms) < 9 {
		more, err := pq.TakeBatch(ctx, 9-len(ms))
		require.NoError(t, err)
		ms = append(ms, more...)
	}
	for _, m := range ms {
		requireJob(t, keep, m.Job, m.ID)
		require.NoError(t, m.SetResult([]byte("p-"+m.ID)))
	}
	require.NoError(t, errors.Join(pq.AckMany(ctx, ms)...))
	pst, err := pq.Stats(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 9, pst.Completed)
	it, err := pq.Get(ctx, "pe")
	require.NoError(t, err)
	require.Equal(t, StateCompleted, it.State)
	require.Equal(t, "p-pe", string(it.Result))
}
