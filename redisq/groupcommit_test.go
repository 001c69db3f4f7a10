package redisq

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A call promoted to send and leaving (its ctx ended) at the same moment
// hands the role on to the next waiting call that is not promoted yet, or
// gives it up.
func TestGroupCommitPromotedCallLeavingHandsOn(t *testing.T) {
	g := &groupCommit[string]{}
	call := func(v string, lead bool) *gcCall[string] {
		c := &gcCall[string]{v: v, promote: make(chan struct{}), lead: lead}
		if lead {
			close(c.promote)
		}
		return c
	}
	promoted := func(c *gcCall[string]) bool {
		select {
		case <-c.promote:
			return c.lead
		default:
			return false
		}
	}
	a, b := call("a", true), call("b", false)
	g.senders, g.pending = 1, []*gcCall[string]{a, b}
	g.leave(a)
	require.Equal(t, []*gcCall[string]{b}, g.pending)
	require.True(t, promoted(b), "the first call not promoted yet takes a's role")
	require.Equal(t, 1, g.senders)

	g.leave(b)
	require.Empty(t, g.pending)
	require.Equal(t, 0, g.senders, "nobody left to take b's role")

	// A call already taken into a batch changes nothing.
	g.leave(b)
	require.Equal(t, 0, g.senders)
}

// Items added while a batch is in flight go together in the next, in
// order, within the limit; a hold keeps them for the caller to take the
// first, and flush waits until every one has gone.
func TestGroupCommitAdd(t *testing.T) {
	noLeaks(t)
	var mu sync.Mutex
	var batches [][]int
	release := make(chan struct{})
	g := &groupCommit[int]{
		send: func(_ context.Context, b []int) {
			if b[0] == 0 {
				<-release // the first batch stays in flight
			}
			mu.Lock()
			batches = append(batches, b)
			mu.Unlock()
		},
		limit: func(w []int) int { return min(len(w), 3) },
	}
	g.add(0)
	for i := 1; i <= 5; i++ {
		g.add(i)
	}
	close(release)
	g.flush()
	var all []int
	for _, b := range batches {
		require.LessOrEqual(t, len(b), 3, "within the limit: %v", batches)
		all = append(all, b...)
	}
	require.Equal(t, []int{0, 1, 2, 3, 4, 5}, all, "each once, in order")
	require.GreaterOrEqual(t, len(batches), 2)
	n := len(batches)

	g.hold(true)
	g.add(6)
	g.add(7)
	time.Sleep(10 * time.Millisecond)
	mu.Lock()
	require.Len(t, batches, n, "held")
	mu.Unlock()
	first, ok := g.takeFirst()
	require.True(t, ok)
	require.Equal(t, 6, first)
	g.flush()
	require.Equal(t, [][]int{{7}}, batches[n:], "the rest goes once the hold ends")
	_, ok = g.takeFirst()
	require.False(t, ok)
}

// With spread set, spread calls waiting behind a batch in flight go in a
// batch of their own at once, up to spread batches in flight; fewer wait
// for a batch to return. Each call returns once its own batch is sent.
func TestGroupCommitSpread(t *testing.T) {
	noLeaks(t)
	const spread = 3
	var mu sync.Mutex
	var batches [][]int
	release := make(chan struct{})
	sent := make(chan []int, 10)
	g := &groupCommit[int]{
		spread: spread,
		send: func(_ context.Context, b []int) {
			sent <- b
			if b[0] == 0 {
				<-release // the first batch stays in flight
			}
			mu.Lock()
			batches = append(batches, b)
			mu.Unlock()
		},
	}
	var wg sync.WaitGroup
	call := func(v int) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			require.NoError(t, g.do(context.Background(), v))
		}()
	}
	waiting := func(n int) {
		for {
			g.mu.Lock()
			k := len(g.pending)
			g.mu.Unlock()
			if k == n {
				return
			}
			time.Sleep(time.Millisecond)
		}
	}
	call(0)
	require.Equal(t, []int{0}, <-sent, "a lone call goes at once")
	for v := 1; v < spread; v++ {
		call(v)
		waiting(v)
	}
	select {
	case b := <-sent:
		t.Fatalf("fewer than spread calls waiting were sent: %v", b)
	case <-time.After(20 * time.Millisecond):
	}
	call(spread)
	select {
	case b := <-sent:
		require.Equal(t, []int{1, 2, 3}, b, "spread waiting calls go together")
	case <-time.After(10 * time.Second):
		t.Fatal("spread waiting calls did not go while the first batch was in flight")
	}
	close(release)
	wg.Wait()
	require.Len(t, batches, 2)
}
