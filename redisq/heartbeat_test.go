package redisq

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Issue 24, item 15: who holds the work. A running Worker is listed with
// the messages its handlers run and since when; one that stops leaves the
// list at once.
func TestWorkersShowsWhoHoldsTheWork(t *testing.T) {
	noLeaks(t)
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "whb")
	ctx := context.Background()
	hostile := "rec:x@1,2:3\xff\n\u202eid"
	for _, id := range []string{"a", hostile} {
		_, err := q.EnqueueAfter(ctx, id, nil, 0)
		require.NoError(t, err)
	}
	release := make(chan struct{})
	var mu sync.Mutex
	claimed := map[string]time.Time{}
	w := NewWorker(q, func(ctx context.Context, m *Message) error {
		mu.Lock()
		claimed[m.ID] = m.ClaimedAt
		mu.Unlock()
		<-release
		return nil
	}, WorkerOptions{Concurrency: 3, Heartbeat: 50 * time.Millisecond, Name: "billing-1"})
	res := make(chan error, 1)
	go func() { res <- w.Run(ctx) }()

	var got WorkerInfo
	eventually(t, 10*time.Second, "the worker is listed with both messages", func() bool {
		ws, err := q.Workers(ctx)
		require.NoError(t, err)
		if len(ws) != 1 || ws[0].Running != 2 {
			return false
		}
		got = ws[0]
		return true
	})
	now := redisNow(t, c)
	require.Equal(t, "billing-1", got.Name)
	require.Equal(t, os.Getpid(), got.PID)
	require.Equal(t, hostName(), got.Host)
	require.Equal(t, 3, got.Concurrency)
	require.GreaterOrEqual(t, got.Held, 2)
	require.Len(t, got.ID, 16)
	require.False(t, got.Beat.After(now))
	require.True(t, got.Expires.After(got.Beat))
	require.False(t, got.Started.After(got.Beat))
	mu.Lock()
	require.Len(t, got.Leases, 2)
	for _, l := range got.Leases {
		at, ok := claimed[l.ID]
		require.True(t, ok, "lease %q is one the handlers run", l.ID)
		require.True(t, l.Claimed.Equal(at), "%q claimed %v, want %v", l.ID, l.Claimed, at)
		require.Equal(t, 1, l.Attempt)
	}
	mu.Unlock()

	close(release)
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	require.NoError(t, w.Shutdown(sctx))
	require.NoError(t, <-res)
	ws, err := q.Workers(ctx)
	require.NoError(t, err)
	require.Empty(t, ws, "a stopped worker leaves the list at once")
	n, err := c.Exists(ctx, q.workerKey(got.ID)).Result()
	require.NoError(t, err)
	require.Zero(t, n)
}

// A worker process that dies leaves the list once its heartbeat lapses
// (three beats), with no process to say goodbye.
func TestWorkersForgetAKilledProcess(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "whbkill")
	cmd := exec.Command(os.Args[0], "-test.run=^TestWorkerHelperProcess$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s|whbkill|10s|2|100ms", workerHelperEnv, s.addr()))
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	sc := bufio.NewScanner(out)
	require.True(t, sc.Scan())
	require.Equal(t, "READY", sc.Text())
	ctx := context.Background()
	eventually(t, 10*time.Second, "the helper is listed", func() bool {
		ws, err := q.Workers(ctx)
		require.NoError(t, err)
		return len(ws) == 1 && ws[0].PID == cmd.Process.Pid
	})
	require.NoError(t, cmd.Process.Kill())
	_, _ = cmd.Process.Wait()
	killed := time.Now()
	eventually(t, 10*time.Second, "the killed worker leaves the list", func() bool {
		ws, err := q.Workers(ctx)
		require.NoError(t, err)
		return len(ws) == 0
	})
	require.GreaterOrEqual(t, time.Since(killed), 100*time.Millisecond, "not before its heartbeat lapsed")
}

func TestLeaseListEncoding(t *testing.T) {
	at := time.UnixMilli(1796167638039)
	ls := []WorkerLease{
		{ID: "a", Claimed: at, Attempt: 1},
		{ID: "1,2:3\xff\n\u202e", Claimed: at.Add(time.Second), Attempt: 7},
		{ID: "", Claimed: at, Attempt: 2},
		{ID: strings.Repeat("x", 100), Claimed: at, Attempt: 3},
	}
	enc, more := encodeLeases(ls, 1<<20)
	require.Zero(t, more)
	require.Equal(t, ls, decodeLeases(enc), "any id comes back exact")
	enc, more = encodeLeases(ls, 60)
	require.Equal(t, 2, more, "what does not fit is counted")
	require.Equal(t, ls[:2], decodeLeases(enc))
	// Data from Redis: nothing malformed panics; it ends the list.
	for _, bad := range []string{"x", "1,2", "1,2,", "1,2,5:ab", "1,2,-1:", "1,x,1:a", "1,2,1:a9"} {
		require.NotPanics(t, func() { decodeLeases(bad) }, bad)
	}
	require.Equal(t, []WorkerLease{{ID: "a", Claimed: time.UnixMilli(1), Attempt: 2}}, decodeLeases("1,2,1:a9"))
}
