package redisq

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// TestGetPrefix: the payload is whole up to max, cut to max up to
// MaxPrefixScan, and not read beyond; PayloadSize is always the full size.
func TestGetPrefix(t *testing.T) {
	s := startRedis(t, "--appendonly", "no")
	c := s.client(t)
	q := newQueue(t, c, "prefix", WithMaxAttempts(1))
	ctx := context.Background()
	load := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(i*7 + i/251)
		}
		return b
	}
	sizes := map[string]int{"empty": 0, "small": 100, "max": 1000, "cut": 5000, "scan": MaxPrefixScan, "huge": MaxPrefixScan + 1}
	for id, n := range sizes {
		_, err := q.EnqueueAfter(ctx, id, load(n), time.Hour)
		require.NoError(t, err)
	}
	for id, n := range sizes {
		for _, max := range []int{0, 1, 1000, MaxPrefixScan} {
			it, err := q.GetPrefix(ctx, id, max)
			require.NoError(t, err, id)
			require.Equal(t, id, it.ID)
			require.Equal(t, StateScheduled, it.State)
			require.Equal(t, n, it.PayloadSize, "%s: PayloadSize is the full size", id)
			full, err := q.Get(ctx, id)
			require.NoError(t, err)
			full.Payload = nil
			got := it
			got.Payload = nil
			require.Equal(t, full, got, "%s: every other field as Get has it", id)
			var want []byte
			switch {
			case n == 0:
				want = []byte{}
			case max == 0 || n > MaxPrefixScan:
				want = nil
			default:
				want = load(n)[:min(n, max)]
			}
			require.Equal(t, want, it.Payload, "%s with max %d", id, max)
		}
	}
	// Dead and in-flight items too.
	_, err := q.EnqueueAfter(ctx, "d", []byte("dead payload"), 0)
	require.NoError(t, err)
	untilRedisTime(t, c, redisNow(t, c).Add(2*time.Millisecond))
	m, err := q.Take(ctx)
	require.NoError(t, err)
	_, err = m.DeadLetter(ctx, "reason")
	require.NoError(t, err)
	it, err := q.GetPrefix(ctx, "d", 4)
	require.NoError(t, err)
	require.Equal(t, StateDead, it.State)
	require.Equal(t, "reason", it.DeadReason)
	require.Equal(t, []byte("dead"), it.Payload)

	_, err = q.GetPrefix(ctx, "nope", 10)
	require.ErrorIs(t, err, ErrNotFound)
	_, err = q.GetPrefix(ctx, "", 10)
	require.ErrorContains(t, err, "empty id")
	for _, bad := range []int{-1, MaxPrefixScan + 1} {
		_, err = q.GetPrefix(ctx, "small", bad)
		require.ErrorContains(t, err, "bad payload prefix "+strconv.Itoa(bad))
	}
	require.NoError(t, q.Close())
	_, err = q.GetPrefix(ctx, "small", 10)
	require.ErrorIs(t, err, ErrClosed)
}

// serverCost is what Redis did for one call: the script's run time
// (SLOWLOG), HGETs run inside it and bytes sent to clients (INFO).
type serverCost struct {
	script time.Duration
	hgets  int64
	sent   int64
}

func measure(t *testing.T, c *redis.Client, call func()) serverCost {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, c.ConfigSet(ctx, "slowlog-log-slower-than", "0").Err())
	require.NoError(t, c.SlowLogReset(ctx).Err())
	require.NoError(t, c.ConfigResetStat(ctx).Err())
	call()
	var cost serverCost
	log, err := c.SlowLogGet(ctx, 100).Result()
	require.NoError(t, err)
	for _, e := range log {
		if len(e.Args) > 0 && strings.EqualFold(e.Args[0], "evalsha") {
			cost.script += e.Duration
		}
	}
	info, err := c.Info(ctx, "commandstats", "stats").Result()
	require.NoError(t, err)
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "cmdstat_hget:calls="); ok {
			cost.hgets, _ = strconv.ParseInt(v[:strings.IndexByte(v, ',')], 10, 64)
		}
		if v, ok := strings.CutPrefix(line, "total_net_output_bytes:"); ok {
			cost.sent, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	return cost
}

// TestGetPrefixCost: on a 10 MiB payload GetPrefix reads nothing of it on
// Redis and sends none of it, where Get copies and sends it all; on a
// 1 MiB payload it reads it once and sends only the prefix. The script
// times are logged, not asserted (the machine is shared).
func TestGetPrefixCost(t *testing.T) {
	s := startRedis(t, "--appendonly", "no")
	c := s.client(t)
	q := newQueue(t, c, "cost")
	ctx := context.Background()
	for id, n := range map[string]int{"10MiB": 10 << 20, "1MiB": 1 << 20, "64KiB": 64 << 10} {
		_, err := q.EnqueueAfter(ctx, id, bytes.Repeat([]byte("x"), n), time.Hour)
		require.NoError(t, err)
	}
	// Load the scripts, so that the measured calls are one EVALSHA each.
	_, _ = q.Get(ctx, "64KiB")
	_, _ = q.GetPrefix(ctx, "64KiB", 1)
	const prefix = 64 << 10
	for _, id := range []string{"10MiB", "1MiB", "64KiB"} {
		get := measure(t, c, func() {
			_, err := q.Get(ctx, id)
			require.NoError(t, err)
		})
		var it Item
		pre := measure(t, c, func() {
			var err error
			it, err = q.GetPrefix(ctx, id, prefix)
			require.NoError(t, err)
		})
		t.Logf("%s: Get %v on Redis (%d HGET, %d bytes sent); GetPrefix(%d) %v (%d HGET, %d bytes sent)",
			id, get.script, get.hgets, get.sent, prefix, pre.script, pre.hgets, pre.sent)
		require.Greater(t, get.sent, int64(it.PayloadSize), "%s: Get sends the payload", id)
		require.Less(t, pre.sent, int64(prefix+4096), "%s: GetPrefix sends at most the prefix", id)
		if it.PayloadSize > MaxPrefixScan {
			require.Zero(t, pre.hgets, "%s: GetPrefix does not read a payload over MaxPrefixScan", id)
			require.Nil(t, it.Payload)
		} else {
			require.EqualValues(t, 1, pre.hgets, id)
			require.Len(t, it.Payload, prefix)
		}
	}
}
