package redisq

import (
	"context"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// Audit SCANs with MATCH "{dq:NAME}:m:*" without escaping glob
// metacharacters in NAME, which New accepts.
func TestRegressionAuditGlobName(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	other := newQueue(t, c, "ab")
	q := newQueue(t, c, "a?")
	ctx := context.Background()
	_, err := other.EnqueueAfter(ctx, "foreign", nil, time.Hour)
	require.NoError(t, err)
	r, err := q.Audit(ctx)
	require.NoError(t, err)
	require.Equal(t, 0, r.Items, "audit of queue %q counted another queue's items; problems: %v", "a?", r.Problems)
	require.True(t, r.OK(), "problems: %v", r.Problems)
}

// Audit on a ClusterClient runs its SCAN closure concurrently on every
// master (ForEachMaster) and appends to one shared slice: a data race
// (run with -race).
func TestRegressionAuditClusterRace(t *testing.T) {
	if _, err := exec.LookPath("redis-cli"); err != nil {
		t.Skip("redis-cli needed")
	}
	var addrs []string
	for i := 0; i < 3; i++ {
		s := startRedis(t, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--appendfsync", "everysec")
		addrs = append(addrs, s.addr())
	}
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	out, err := exec.Command("redis-cli", args...).CombinedOutput()
	require.NoError(t, err, string(out))
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	defer cc.Close()
	ctx := context.Background()
	eventually(t, 20*time.Second, "cluster ok", func() bool {
		info, err := cc.ClusterInfo(ctx).Result()
		return err == nil && len(info) > 0 && containsLine(info, "cluster_state:ok")
	})
	q, err := New(ctx, cc, "cl")
	require.NoError(t, err)
	defer q.Close()
	for i := 0; i < 50; i++ {
		_, err := q.EnqueueAfter(ctx, "i"+strconv.Itoa(i), nil, 0)
		require.NoError(t, err)
	}
	m, err := q.Take(ctx)
	require.NoError(t, err)
	require.NoError(t, m.Ack(ctx))
	for i := 0; i < 5; i++ {
		r, err := q.Audit(ctx)
		require.NoError(t, err)
		require.Equal(t, 49, r.Items)
		require.True(t, r.OK(), "%v", r.Problems)
	}
}

func containsLine(s, l string) bool {
	for _, x := range splitLines(s) {
		if x == l {
			return true
		}
	}
	return false
}

// Regression (issue 8, item 5): New accepts any name without braces, but
// globEscape ranged over runes, so a name that is not valid UTF-8 became
// U+FFFD in the SCAN pattern, which matched none of the queue's keys: Audit
// found no item hashes and reported every member as an orphan.
func TestAuditQueueNameNotValidUTF8(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	ctx := context.Background()
	for _, name := range []string{"\xff\xfe", "a\x80*[b]\xc3"} {
		q := newQueue(t, c, name)
		for _, id := range []string{"x", "y\xff", "z"} {
			_, err := q.EnqueueAfter(ctx, id, nil, time.Hour)
			require.NoError(t, err)
		}
		_, err := q.EnqueueAfter(ctx, "now", nil, 0)
		require.NoError(t, err)
		m, err := q.Take(ctx)
		require.NoError(t, err)
		r := audit(t, q)
		require.Equal(t, 4, r.Items, "queue %q", name)
		require.Equal(t, 3, r.Scheduled)
		require.Equal(t, 1, r.Leased)
		require.NoError(t, m.Ack(ctx))
	}
}
