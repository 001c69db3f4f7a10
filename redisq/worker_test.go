package redisq

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/dq-go/delayqueue/redisq/internal/rdb"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// noLeaks fails t if a goroutine started during the test is still running
// after every other cleanup (registered first, it runs last).
func noLeaks(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
}

// runWorker runs w until the test ends (Shutdown with 10 s, then Run must
// return) and returns a channel that receives Run's result.
func runWorker(t *testing.T, w *Worker) <-chan error {
	t.Helper()
	res := make(chan error, 1)
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		res <- w.Run(context.Background())
	}()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = w.Shutdown(ctx)
		select {
		case <-ran:
		case <-time.After(20 * time.Second):
			t.Error("Run did not return after Shutdown")
		}
	})
	return res
}

// syncBuffer is a bytes.Buffer safe for concurrent writes (a log sink).
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// scriptLog records, in order, which of the named scripts the client ran
// (EVALSHA, or EVAL of the script's text, in pipelines too).
type scriptLog struct {
	names map[string]string // sha1 -> name
	mu    sync.Mutex
	runs  []string
}

func newScriptLog(named map[string]*script) *scriptLog {
	l := &scriptLog{names: map[string]string{}}
	for name, s := range named {
		l.names[s.Hash()] = name
	}
	return l
}

func (l *scriptLog) note(cmd redis.Cmder) {
	a := cmd.Args()
	if len(a) < 2 {
		return
	}
	body, _ := a[1].(string)
	var name string
	switch strings.ToLower(cmd.Name()) {
	case "evalsha":
		name = l.names[body]
	case "eval":
		name = l.names[fmt.Sprintf("%x", sha1.Sum([]byte(body)))]
	}
	if name != "" {
		l.mu.Lock()
		l.runs = append(l.runs, name)
		l.mu.Unlock()
	}
}

func (l *scriptLog) log() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.runs)
}

func (l *scriptLog) DialHook(next redis.DialHook) redis.DialHook { return next }
func (l *scriptLog) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		l.note(cmd)
		return next(ctx, cmd)
	}
}
func (l *scriptLog) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			l.note(c)
		}
		return next(ctx, cmds)
	}
}

// deadReasons lists the dead items' reasons and attempts by id.
func deadReasons(t *testing.T, q *Queue) map[string]Item {
	t.Helper()
	page, err := q.List(context.Background(), StateDead, ListOptions{Limit: 100})
	require.NoError(t, err)
	out := map[string]Item{}
	for _, it := range page.Items {
		out[it.ID] = it
	}
	return out
}

// Handler results are settled as documented: nil acks; an error nacks with
// the backoff and its text as the reason (dead with "max attempts: " +
// reason at max attempts); a panic is an error "panic: ..." and is logged
// with its stack; SkipRetry dead-letters at once with the error's text;
// RetryAfter redelivers after its delay; reasons are truncated to
// MaxReasonLen.
func TestWorkerSettlesHandlerResults(t *testing.T) {
	noLeaks(t)
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "wsettle", WithMaxAttempts(2), WithBackoff(0, 0), WithWakeCap(100*time.Millisecond))
	ctx := context.Background()
	long := strings.Repeat("x", 2*MaxReasonLen)
	for _, id := range []string{"ok", "fail", "panic", "skip", "wrapped-skip", "long-skip", "later", "later-nil"} {
		_, err := q.EnqueueAfter(ctx, id, nil, 0)
		require.NoError(t, err)
	}

	var mu sync.Mutex
	runs := map[string][]*Message{}
	var done sync.WaitGroup
	done.Add(8 + 4) // 8 items, and fail, panic, later and later-nil once more
	h := func(ctx context.Context, m *Message) error {
		mu.Lock()
		runs[m.ID] = append(runs[m.ID], m)
		mu.Unlock()
		defer done.Done()
		switch m.ID {
		case "fail":
			return errors.New("boom")
		case "panic":
			panic("oops")
		case "skip":
			return SkipRetry(errors.New("bad input"))
		case "wrapped-skip":
			return fmt.Errorf("parsing: %w", SkipRetry(errors.New("bad json")))
		case "long-skip":
			return SkipRetry(errors.New(long))
		case "later":
			if m.Attempts == 1 {
				return RetryAfter(errors.New("busy"), 300*time.Millisecond)
			}
		case "later-nil":
			if m.Attempts == 1 {
				return RetryAfter(nil, 0)
			}
		}
		return nil
	}
	var logs syncBuffer
	w := NewWorker(q, h, WorkerOptions{Concurrency: 3, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	runWorker(t, w)
	waitGroup(t, &done, 20*time.Second)
	eventually(t, 10*time.Second, "every item settled", func() bool {
		st, err := q.Stats(ctx)
		require.NoError(t, err)
		return st.Scheduled == 0 && st.InFlight == 0
	})

	dead := deadReasons(t, q)
	require.Len(t, dead, 5, "dead: %v", dead)
	for id, want := range map[string]struct {
		reason   string
		attempts int
	}{
		"fail":         {"max attempts: boom", 2},
		"panic":        {"max attempts: panic: oops", 2},
		"skip":         {"bad input", 1},
		"wrapped-skip": {"parsing: bad json", 1},
		"long-skip":    {long[:MaxReasonLen], 1},
	} {
		require.Equal(t, want.reason, dead[id].DeadReason, id)
		require.Equal(t, want.attempts, dead[id].Attempts, id)
	}
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, runs["ok"], 1)
	require.Len(t, runs["later"], 2)
	require.GreaterOrEqual(t, runs["later"][1].Due.Sub(runs["later"][0].ClaimedAt), 300*time.Millisecond,
		"RetryAfter(300ms) redelivered early")
	require.Len(t, runs["later-nil"], 2)
	st, err := q.Stats(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 3, st.Acked, "ok, later, later-nil")
	require.EqualValues(t, 6, st.Nacked, "fail and panic twice each (the second dead-letters), later and later-nil")
	require.EqualValues(t, 0, st.Expired)

	out := logs.String()
	require.Contains(t, out, `"msg":"redisq: worker: handler panicked"`)
	require.Contains(t, out, `"panic":"oops"`)
	require.Contains(t, out, "worker_test.go", "the panic is logged with its stack")
	audit(t, q)
}

func waitGroup(t *testing.T, wg *sync.WaitGroup, d time.Duration) {
	t.Helper()
	ch := make(chan struct{})
	go func() { wg.Wait(); close(ch) }()
	select {
	case <-ch:
	case <-time.After(d):
		t.Fatalf("not done within %v", d)
	}
}

// A handler running three times the visibility timeout runs once: the
// worker extends its lease while it runs (another consumer polling the
// queue all along never gets it), and stops extending when it returns.
func TestWorkerExtendsLeaseOfLongHandler(t *testing.T) {
	noLeaks(t)
	s := startRedis(t)
	c := s.client(t)
	scripts := newScriptLog(map[string]*script{"extend": scriptExtend,
		"ack": scriptAck, "ackclaim": scriptAckClaim, "ackmany": scriptAckMany})
	c.AddHook(scripts)
	const vis = 1500 * time.Millisecond // a stall of 1 s would lose the lease
	q := newQueue(t, c, "wlong", WithVisibilityTimeout(vis), WithBackoff(0, 0), WithWakeCap(20*time.Millisecond))
	other := newQueue(t, s.client(t), "wlong", WithVisibilityTimeout(vis), WithWakeCap(20*time.Millisecond))
	ctx := context.Background()
	_, err := q.EnqueueAfter(ctx, "long", nil, 0)
	require.NoError(t, err)

	var runs atomic.Int32
	started, returned := make(chan struct{}), make(chan struct{})
	w := NewWorker(q, func(ctx context.Context, m *Message) error {
		if runs.Add(1) > 1 {
			return nil
		}
		close(started)
		defer close(returned)
		select {
		case <-time.After(3*vis + 200*time.Millisecond):
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}, WorkerOptions{Concurrency: 2})
	runWorker(t, w)
	<-started

	// Another consumer claims all along: a claim reclaims expired leases.
	octx, stopOther := context.WithCancel(ctx)
	var stolen atomic.Int32
	var owg sync.WaitGroup
	owg.Add(1)
	go func() {
		defer owg.Done()
		for octx.Err() == nil {
			m, err := other.Take(octx)
			if err == nil {
				stolen.Add(1)
				_ = m.Release(context.Background())
			}
		}
	}()
	defer func() { stopOther(); owg.Wait() }()

	select {
	case <-returned:
	case <-time.After(20 * time.Second):
		t.Fatal("the handler did not return")
	}
	eventually(t, 10*time.Second, "acked", func() bool {
		_, err := q.Get(ctx, "long")
		return errors.Is(err, ErrNotFound)
	})
	stopOther()
	owg.Wait()
	require.EqualValues(t, 1, runs.Load(), "run once")
	require.Zero(t, stolen.Load(), "another consumer got the message")
	time.Sleep(vis) // three extension periods more
	// Every extension ran before the ack: none after the handler returned
	// (an extension in flight then is waited for before the ack).
	log := scripts.log()
	acked := slices.IndexFunc(log, func(s string) bool { return strings.HasPrefix(s, "ack") })
	require.GreaterOrEqual(t, acked, 0, "no ack: %v", log)
	require.NotContains(t, log[acked:], "extend", "extended after the handler returned")
	require.GreaterOrEqual(t, acked, 4, "extended about every %v over %v: %v", vis/3, 3*vis, log)
	st, err := q.Stats(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 0, st.Expired)
	require.EqualValues(t, 1, st.Acked)
}

// When an extension finds the lease lost, the handler's ctx is cancelled
// with a cause wrapping ErrLeaseLost and its result is dropped: the
// message is neither acked nor nacked by that run, and comes back after
// the lease.
func TestWorkerLeaseLostCancelsHandler(t *testing.T) {
	noLeaks(t)
	s := startRedis(t)
	c := s.client(t)
	const vis = 300 * time.Millisecond
	q := newQueue(t, c, "wlost", WithVisibilityTimeout(vis), WithBackoff(0, 0), WithWakeCap(50*time.Millisecond))
	ctx := context.Background()
	_, err := q.EnqueueAfter(ctx, "job", nil, 0)
	require.NoError(t, err)

	started := make(chan *Message, 2)
	causes := make(chan error, 2)
	var logs syncBuffer
	w := NewWorker(q, func(ctx context.Context, m *Message) error {
		started <- m
		if m.Attempts > 1 {
			return nil
		}
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return nil // dropped: the lease is lost
	}, WorkerOptions{Concurrency: 1, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	runWorker(t, w)

	first := <-started
	// Another owner: the token no longer matches, as after an expiry and
	// a claim elsewhere.
	require.NoError(t, c.HSet(ctx, q.db.Keys.Items+"job", "tok", "stolen").Err())
	var cause error
	select {
	case cause = <-causes:
	case <-time.After(10 * time.Second):
		t.Fatal("the handler's ctx was not cancelled")
	}
	require.ErrorIs(t, cause, ErrLeaseLost)
	require.Contains(t, cause.Error(), "lease")
	require.Contains(t, cause.Error(), `"job"`)
	st, err := q.Stats(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 0, st.Acked+st.Nacked, "result dropped")
	eventually(t, 5*time.Second, "the drop is logged", func() bool {
		return strings.Contains(logs.String(), `"msg":"redisq: worker: lease lost while the handler ran; result dropped"`)
	})

	var second *Message
	select {
	case second = <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("not redelivered after the lease")
	}
	require.Equal(t, 2, second.Attempts)
	require.NotEqual(t, first.token, second.token)
	eventually(t, 10*time.Second, "acked", func() bool {
		_, err := q.Get(ctx, "job")
		return errors.Is(err, ErrNotFound)
	})
	st, err = q.Stats(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 1, st.Acked)
	require.EqualValues(t, 1, st.Expired)
	require.EqualValues(t, 0, st.Nacked)
}

// Shutdown with handlers in flight: taking stops at once; when Shutdown's
// ctx ends, the handlers' contexts are cancelled (ErrWorkerStopped) and
// their messages are handed back before Shutdown returns, with no attempt
// counted, so a consumer elsewhere gets them at once instead of after the
// visibility timeout.
func TestWorkerShutdownHandsBackInFlight(t *testing.T) {
	noLeaks(t)
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "wshut", WithVisibilityTimeout(time.Minute))
	other := newQueue(t, s.client(t), "wshut", WithVisibilityTimeout(time.Minute), WithWakeCap(time.Minute))
	ctx := context.Background()
	for _, id := range []string{"a", "b", "c"} {
		_, err := q.EnqueueAfter(ctx, id, nil, 0)
		require.NoError(t, err)
	}
	running := make(chan *Message, 3)
	causes := make(chan error, 3)
	w := NewWorker(q, func(ctx context.Context, m *Message) error {
		running <- m
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return ctx.Err() // dropped, not a Nack
	}, WorkerOptions{Concurrency: 3})
	runErr := runWorker(t, w)
	held := map[string]*Message{}
	for range 3 {
		select {
		case m := <-running:
			held[m.ID] = m
		case <-time.After(10 * time.Second):
			t.Fatal("handlers did not start")
		}
	}

	// Another worker, waiting for work (a wait of a minute).
	type got struct {
		m  *Message
		at time.Time
	}
	gotc := make(chan got, 3)
	runWorker(t, NewWorker(other, func(ctx context.Context, m *Message) error {
		gotc <- got{m, time.Now()}
		return nil
	}, WorkerOptions{Concurrency: 3}))
	eventually(t, 10*time.Second, "the other worker blocks", func() bool { return blockedTakes(t, q) >= 1 })

	sctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, w.Shutdown(sctx), context.DeadlineExceeded)
	returned := time.Now()
	// Handed back before Shutdown returned: no lease of this worker's is
	// left.
	for id, m := range held {
		tok, err := c.HGet(ctx, q.db.Keys.Items+id, "tok").Result()
		if errors.Is(err, redis.Nil) {
			continue // the other worker has acked it already
		}
		require.NoError(t, err)
		require.NotEqual(t, m.token, tok, "%s still leased to the worker after Shutdown", id)
	}
	for range 3 {
		select {
		case g := <-gotc:
			require.Equal(t, 1, g.m.Attempts, "%s: the worker's delivery was counted", g.m.ID)
			require.Contains(t, held, g.m.ID)
			t.Logf("%s delivered again %v after Shutdown returned", g.m.ID, g.at.Sub(returned))
			require.Less(t, g.at.Sub(returned), 5*time.Second, "%s: not handed back at once", g.m.ID)
		case <-time.After(10 * time.Second):
			t.Fatal("the handed-back messages were not delivered again")
		}
	}
	select {
	case err := <-runErr:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return")
	}
	for range 3 {
		require.ErrorIs(t, <-causes, ErrWorkerStopped)
	}
	var st Stats
	eventually(t, 10*time.Second, "acked by the other worker", func() bool {
		var err error
		st, err = q.Stats(ctx)
		require.NoError(t, err)
		return st.Acked == 3
	})
	require.Equal(t, StatsCounters{Enqueued: 3, Delivered: 6, Acked: 3}, st.StatsCounters, "no nack, no expiry")
	audit(t, q)
}

// Shutdown with time enough: taking stops at once, running handlers
// finish with their ctx intact, their messages are acked, and Shutdown
// returns nil once Run has returned.
func TestWorkerShutdownLetsHandlersFinish(t *testing.T) {
	noLeaks(t)
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "wgrace")
	ctx := context.Background()
	for _, id := range []string{"a", "b"} {
		_, err := q.EnqueueAfter(ctx, id, nil, 0)
		require.NoError(t, err)
	}
	running := make(chan struct{}, 2)
	release := make(chan struct{})
	var cancelled atomic.Int32
	w := NewWorker(q, func(ctx context.Context, m *Message) error {
		running <- struct{}{}
		<-release
		if ctx.Err() != nil {
			cancelled.Add(1)
		}
		return nil
	}, WorkerOptions{Concurrency: 4})
	runErr := runWorker(t, w)
	<-running
	<-running
	shut := make(chan error, 1)
	go func() { shut <- w.Shutdown(ctx) }()
	// Taking has stopped: a new item stays scheduled.
	time.Sleep(100 * time.Millisecond)
	_, err := q.EnqueueAfter(ctx, "late", nil, 0)
	require.NoError(t, err)
	time.Sleep(200 * time.Millisecond)
	close(release)
	select {
	case err := <-shut:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Shutdown did not return")
	}
	require.NoError(t, <-runErr, "Run has returned when Shutdown returns nil")
	require.Zero(t, cancelled.Load())
	it, err := q.Get(ctx, "late")
	require.NoError(t, err)
	require.Equal(t, StateScheduled, it.State, "taken after Shutdown")
	st, err := q.Stats(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 2, st.Acked)
	require.EqualValues(t, 0, st.InFlight)
}

// A worker waiting for work stops at once on Shutdown (its blocked Take
// returns), and Run returns with no goroutine left; Shutdown before Run
// makes Run return at once.
func TestWorkerShutdownWhileIdle(t *testing.T) {
	noLeaks(t)
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "widle", WithWakeCap(time.Minute))
	w := NewWorker(q, func(context.Context, *Message) error { return nil }, WorkerOptions{})
	runErr := runWorker(t, w)
	eventually(t, 10*time.Second, "the worker blocks", func() bool { return blockedTakes(t, q) == 1 })
	start := time.Now()
	require.NoError(t, w.Shutdown(context.Background()))
	require.Less(t, time.Since(start), 5*time.Second, "the blocked Take did not return promptly")
	require.NoError(t, <-runErr)

	w2 := NewWorker(q, func(context.Context, *Message) error { return nil }, WorkerOptions{})
	require.NoError(t, w2.Shutdown(context.Background()))
	require.NoError(t, w2.Run(context.Background()))
	require.Panics(t, func() { _ = w2.Run(context.Background()) })
}

// The end of Run's ctx stops the worker as a Shutdown whose time is up once
// the ShutdownTimeout has passed: handlers still running are cancelled
// (ErrWorkerStopped), their messages handed back uncounted, and Run returns
// nil once the handlers have returned.
func TestWorkerRunContextStops(t *testing.T) {
	noLeaks(t)
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "wctx", WithVisibilityTimeout(time.Minute))
	ctx := context.Background()
	_, err := q.EnqueueAfter(ctx, "a", nil, 0)
	require.NoError(t, err)
	running := make(chan struct{})
	var cause error
	w := NewWorker(q, func(ctx context.Context, m *Message) error {
		close(running)
		<-ctx.Done()
		time.Sleep(50 * time.Millisecond) // a handler slow to notice
		cause = context.Cause(ctx)
		return nil
	}, WorkerOptions{ShutdownTimeout: 200 * time.Millisecond})
	rctx, cancel := context.WithCancel(ctx)
	res := make(chan error, 1)
	go func() { res <- w.Run(rctx) }()
	<-running
	cancel()
	select {
	case err := <-res:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return")
	}
	require.ErrorIs(t, cause, ErrWorkerStopped)
	it, err := q.Get(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, StateScheduled, it.State)
	require.Equal(t, 0, it.Attempts, "the stopped run is not counted")
	st, err := q.Stats(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 0, st.Acked+st.Nacked+st.Expired, "result dropped")
}

// Regression (issue 24, item 4): the README's worker ran on the signal
// context, whose end cancelled the running handlers at once; their items
// ran again after the restart (4 jobs of 3 s each ran twice). The end of
// Run's ctx now lets them finish within the ShutdownTimeout, and their
// messages are acked.
func TestWorkerRunContextEndLetsHandlersFinish(t *testing.T) {
	noLeaks(t)
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "wgrace", WithVisibilityTimeout(time.Minute))
	ctx := context.Background()
	for i := range 4 {
		_, err := q.EnqueueAfter(ctx, fmt.Sprint("job", i), nil, 0)
		require.NoError(t, err)
	}
	var running, finished sync.WaitGroup
	running.Add(4)
	var mu sync.Mutex
	runs := map[string]int{}
	w := NewWorker(q, func(ctx context.Context, m *Message) error {
		mu.Lock()
		runs[m.ID]++
		mu.Unlock()
		running.Done()
		select {
		case <-time.After(300 * time.Millisecond): // the job's work
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}, WorkerOptions{Concurrency: 4})
	sig, stop := context.WithCancel(ctx) // as signal.NotifyContext's
	res := make(chan error, 1)
	finished.Add(1)
	go func() { defer finished.Done(); res <- w.Run(sig) }()
	waitGroup(t, &running, 20*time.Second)
	stop() // SIGTERM
	select {
	case err := <-res:
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return")
	}
	st, err := q.Stats(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 4, st.Acked, "every running job finished and was acked")
	require.Zero(t, st.Scheduled+st.InFlight, "nothing is left to run again")
	mu.Lock()
	defer mu.Unlock()
	for id, n := range runs {
		require.Equal(t, 1, n, id)
	}
}

// Issue 24, item 5: a handler's error that dead-letters its message is
// logged at Warn by the worker itself, without the Logging middleware.
func TestWorkerLogsDeadLetters(t *testing.T) {
	noLeaks(t)
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "wdead", WithMaxAttempts(1))
	ctx := context.Background()
	for _, id := range []string{"skip", "spent", "fine"} {
		_, err := q.EnqueueAfter(ctx, id, nil, 0)
		require.NoError(t, err)
	}
	var logs syncBuffer
	w := NewWorker(q, func(ctx context.Context, m *Message) error {
		switch m.ID {
		case "skip":
			return SkipRetry(errors.New("bad input"))
		case "spent":
			return errors.New("upstream down")
		}
		return nil
	}, WorkerOptions{Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	runWorker(t, w)
	eventually(t, 20*time.Second, "both dead", func() bool {
		st, err := q.Stats(ctx)
		require.NoError(t, err)
		return st.Dead == 2 && st.Acked == 1
	})
	eventually(t, 5*time.Second, "both logged", func() bool {
		return strings.Count(logs.String(), "message dead-lettered") == 2
	})
	var recs []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var r map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &r), line)
		if r["msg"] == "redisq: worker: message dead-lettered" {
			recs = append(recs, r)
		}
	}
	require.Len(t, recs, 2)
	byID := map[string]map[string]any{}
	for _, r := range recs {
		require.Equal(t, "WARN", r["level"])
		require.Equal(t, "wdead", r["queue"])
		byID[r["id"].(string)] = r
	}
	require.Equal(t, "skip retry", byID["skip"]["cause"])
	require.Equal(t, "bad input", byID["skip"]["err"])
	require.Equal(t, "max attempts", byID["spent"]["cause"])
	require.Equal(t, "upstream down", byID["spent"]["err"])
}

// Closing the Queue stops the worker: the running handler finishes, its
// message is acked (Ack works after Close), and Run returns ErrClosed.
func TestWorkerQueueClosed(t *testing.T) {
	noLeaks(t)
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "wclosed")
	ctx := context.Background()
	_, err := q.EnqueueAfter(ctx, "a", nil, 0)
	require.NoError(t, err)
	running := make(chan struct{})
	finish := make(chan struct{})
	w := NewWorker(q, func(ctx context.Context, m *Message) error {
		close(running)
		<-finish
		return nil
	}, WorkerOptions{})
	runErr := runWorker(t, w)
	<-running
	closed := make(chan struct{})
	go func() { _ = q.Close(); close(closed) }()
	<-closed
	close(finish)
	select {
	case err := <-runErr:
		require.ErrorIs(t, err, ErrClosed)
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return")
	}
	n, err := c.Exists(ctx, q.db.Keys.Items+"a").Result()
	require.NoError(t, err)
	require.Zero(t, n, "acked after Close")
}

// A busy worker pays one round trip per message or less: each claim's
// script acks a finished message (AckTake), and in a backlog each handler
// acks its message and claims the next in one script.
func TestWorkerOneRoundTripPerMessage(t *testing.T) {
	for _, n := range []int{1, 4} {
		t.Run(fmt.Sprint("concurrency=", n), func(t *testing.T) {
			noLeaks(t)
			s := startRedis(t, "--appendfsync", "no")
			c := s.client(t)
			h := &countHook{}
			c.AddHook(h)
			q := newQueue(t, c, "wrt")
			const items = 300
			seed(t, q, ids("i", items))
			var handled atomic.Int32
			before, evals := h.total.Load(), h.eval.Load()
			w := NewWorker(q, func(context.Context, *Message) error {
				handled.Add(1)
				return nil
			}, WorkerOptions{Concurrency: n})
			runWorker(t, w)
			poll := s.client(t) // not counted
			eventually(t, 20*time.Second, "all acked", func() bool {
				n, err := poll.Exists(context.Background(), q.db.Keys.Items+"i"+fmt.Sprint(items-1)).Result()
				require.NoError(t, err)
				m, err := poll.ZCard(context.Background(), q.db.Keys.Lease).Result()
				require.NoError(t, err)
				return handled.Load() == items && n+m == 0
			})
			cmds, scripts := h.total.Load()-before, h.eval.Load()-evals
			t.Logf("concurrency %d: %d commands sent for %d messages, %d of them scripts", n, cmds, items, scripts)
			// A few more: the first claim, the claims that find the
			// backlog gone, the wait once all are done. (The other
			// commands are the Queue's: on a loaded machine its watch
			// rings the wake marker when a claim comes more than 1 ms
			// after the last.)
			require.LessOrEqual(t, scripts, int64(items+20), "more than one round trip per message")
			require.EqualValues(t, items, handled.Load())
		})
	}
}

// The handler's ctx carries the message, and Middleware[0] is outermost.
func TestWorkerMiddlewareAndContext(t *testing.T) {
	noLeaks(t)
	s := startRedis(t)
	q := newQueue(t, s.client(t), "wmw")
	ctx := context.Background()
	_, err := q.EnqueueAfter(ctx, "a", nil, 0)
	require.NoError(t, err)
	var order []string
	var mu sync.Mutex
	note := func(s string) { mu.Lock(); order = append(order, s); mu.Unlock() }
	mw := func(name string) Middleware {
		return func(next Handler) Handler {
			return func(ctx context.Context, m *Message) error {
				note(name + " in")
				err := next(ctx, m)
				note(name + " out " + Outcome(err))
				return err
			}
		}
	}
	type key struct{}
	done := make(chan struct{})
	w := NewWorker(q, func(ctx context.Context, m *Message) error {
		defer close(done)
		got, ok := MessageFromContext(ctx)
		require.True(t, ok)
		require.Same(t, m, got)
		require.Equal(t, "wmw", m.QueueName())
		require.Equal(t, "run value", ctx.Value(key{}), "Run's ctx values reach the handler")
		note("handler")
		panic("in handler")
	}, WorkerOptions{Middleware: []Middleware{mw("outer"), nil, mw("inner")}, Logger: slog.New(slog.DiscardHandler)})
	res := make(chan error, 1)
	go func() { res <- w.Run(context.WithValue(ctx, key{}, "run value")) }()
	<-done
	eventually(t, 10*time.Second, "nacked", func() bool {
		st, err := q.Stats(ctx)
		require.NoError(t, err)
		return st.Nacked == 1
	})
	require.NoError(t, w.Shutdown(ctx))
	require.NoError(t, <-res)
	require.Equal(t, []string{"outer in", "inner in", "handler", "inner out panic", "outer out panic"}, order)
	_, ok := MessageFromContext(ctx)
	require.False(t, ok)
}

// The error wrappers are found by errors.As and keep the cause's text.
func TestWorkerErrorWrappers(t *testing.T) {
	cause := errors.New("cause")
	var skip *SkipRetryError
	require.ErrorAs(t, fmt.Errorf("a: %w", SkipRetry(cause)), &skip)
	require.ErrorIs(t, skip, cause)
	require.Equal(t, "cause", SkipRetry(cause).Error())
	require.Equal(t, "redisq: skip retry", SkipRetry(nil).Error())
	var later *RetryAfterError
	require.ErrorAs(t, fmt.Errorf("a: %w", RetryAfter(cause, time.Second)), &later)
	require.Equal(t, time.Second, later.Delay)
	require.Equal(t, "redisq: retry after 2s", RetryAfter(nil, 2*time.Second).Error())
	require.Equal(t, time.Duration(0), RetryAfter(nil, -time.Second).(*RetryAfterError).Delay)
	pe := &PanicError{Value: cause}
	require.Equal(t, "panic: cause", pe.Error())
	require.ErrorIs(t, pe, cause)
	for err, want := range map[error]string{
		nil: "ok", cause: "error", SkipRetry(cause): "skip_retry", RetryAfter(cause, 0): "retry_after",
		pe: "panic", fmt.Errorf("x: %w", SkipRetry(RetryAfter(cause, 0))): "skip_retry",
	} {
		require.Equal(t, want, Outcome(err), "%v", err)
	}
	require.Panics(t, func() { NewWorker(nil, func(context.Context, *Message) error { return nil }, WorkerOptions{}) })
}

// workerHelperEnv makes the test binary a worker process (see
// TestWorkerHelperProcess): "addr|queue|visibility|concurrency", and
// optionally "|heartbeat".
const workerHelperEnv = "REDISQ_WORKER_HELPER"

// TestWorkerHelperProcess is the worker process of
// TestWorkerSIGKILLedProcesses; it returns at once unless the test binary
// was started as such. Its handler sleeps 10-50 ms, then records the
// message in the list "ledger" and returns nil. It runs until killed.
func TestWorkerHelperProcess(t *testing.T) {
	spec := os.Getenv(workerHelperEnv)
	if spec == "" {
		return
	}
	f := strings.Split(spec, "|")
	vis, _ := time.ParseDuration(f[2])
	var n int
	_, _ = fmt.Sscan(f[3], &n)
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: f[0]})
	q, err := New(ctx, c, f[1], WithVisibilityTimeout(vis), WithBackoff(0, 0), WithWakeCap(100*time.Millisecond))
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(2)
	}
	var beat time.Duration
	if len(f) > 4 {
		beat, _ = time.ParseDuration(f[4])
	}
	w := NewWorker(q, func(ctx context.Context, m *Message) error {
		time.Sleep(time.Duration(10+rand.IntN(40)) * time.Millisecond)
		return c.RPush(ctx, "ledger", fmt.Sprintf("%s %d %d", m.ID, m.Attempts, os.Getpid())).Err()
	}, WorkerOptions{Concurrency: n, Heartbeat: beat})
	fmt.Println("READY")
	err = w.Run(ctx)
	fmt.Println("ERR", err)
	os.Exit(3)
}

// Worker processes SIGKILLed mid-handler, again and again, while others
// work: every message is acked exactly once, by a handler run that
// completed (the ledger), none is lost, and those held by a killed process
// come back after their lease.
func TestWorkerSIGKILLedProcesses(t *testing.T) {
	noLeaks(t)
	s := startRedis(t)
	c := s.client(t)
	const vis = time.Second
	q := newQueue(t, c, "wkill", WithVisibilityTimeout(vis))
	const n = 400
	seed(t, q, ids("k", n))

	var procs []*exec.Cmd
	start := func() {
		cmd := exec.Command(os.Args[0], "-test.run=^TestWorkerHelperProcess$")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s|wkill|%v|3", workerHelperEnv, s.addr(), vis))
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		cmd.Stderr = os.Stderr
		require.NoError(t, cmd.Start())
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		sc := bufio.NewScanner(out)
		require.True(t, sc.Scan(), "helper output")
		require.Equal(t, "READY", sc.Text())
		go func() { // drain
			for sc.Scan() {
			}
		}()
		procs = append(procs, cmd)
	}
	start()
	start()
	ctx := context.Background()
	acked := func() int64 {
		st, err := q.Stats(ctx)
		require.NoError(t, err)
		return st.Acked
	}
	kills := 0
	for kills < 8 && acked() < n*3/4 {
		time.Sleep(time.Duration(150+rand.IntN(200)) * time.Millisecond)
		st, err := q.Stats(ctx)
		require.NoError(t, err)
		if st.InFlight == 0 {
			continue
		}
		victim := procs[0]
		procs = procs[1:]
		require.NoError(t, victim.Process.Signal(syscall.SIGKILL))
		_ = victim.Wait()
		kills++
		start()
	}
	eventually(t, 60*time.Second, "every message acked", func() bool {
		st, err := q.Stats(ctx)
		require.NoError(t, err)
		return st.Scheduled == 0 && st.InFlight == 0
	})
	for _, p := range procs {
		_ = p.Process.Kill()
		_ = p.Wait()
	}
	st, err := q.Stats(ctx)
	require.NoError(t, err)
	t.Logf("%d kills; stats %+v", kills, st.StatsCounters)
	require.Positive(t, kills)
	require.EqualValues(t, n, st.Acked, "acked exactly once each")
	require.EqualValues(t, 0, st.Dead)
	require.Positive(t, st.Expired, "no kill hit a handler")
	ledger, err := c.LRange(ctx, "ledger", 0, -1).Result()
	require.NoError(t, err)
	runs := map[string]int{}
	for _, l := range ledger {
		runs[strings.Fields(l)[0]]++
	}
	for _, id := range ids("k", n) {
		require.Positive(t, runs[id], "%s acked without a completed handler run", id)
	}
	r := audit(t, q)
	require.Zero(t, r.Items)
}

// Release hands a message back at once without counting the delivery: the
// item is due at its old due time, its attempts as before the lease, a
// blocked consumer elsewhere is woken for it, the released lease can no
// longer be settled, and neither Nacked nor Expired counts it.
func TestReleaseHandsBackUncounted(t *testing.T) {
	noLeaks(t)
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "rel", WithVisibilityTimeout(time.Minute))
	other := newQueue(t, s.client(t), "rel", WithWakeCap(time.Minute))
	ctx := context.Background()
	due, err := q.EnqueueAfter(ctx, "a", []byte("pa"), 0)
	require.NoError(t, err)
	_, err = q.EnqueueAfter(ctx, "later", nil, time.Hour)
	require.NoError(t, err)
	m, err := q.Take(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, m.Attempts)

	got := takeAsync(func() (*Message, error) { return other.Take(ctx) })
	eventually(t, 10*time.Second, "the other consumer blocks", func() bool { return blockedTakes(t, q) >= 1 })
	require.NoError(t, m.Release(ctx))
	var m2 *Message
	select {
	case m2 = <-got:
	case <-time.After(5 * time.Second):
		t.Fatal("a blocked consumer was not woken for the released message")
	}
	require.Equal(t, "a", m2.ID)
	require.Equal(t, 1, m2.Attempts, "the released delivery was counted")
	require.Equal(t, due, m2.Due, "due time kept")
	require.Equal(t, []byte("pa"), m2.Payload)
	require.NotEqual(t, m.token, m2.token)
	require.ErrorIs(t, m.Ack(ctx), ErrLeaseLost, "the released lease settles nothing")
	require.ErrorIs(t, m.Release(ctx), ErrLeaseLost)
	st, err := q.Stats(ctx)
	require.NoError(t, err)
	require.Equal(t, StatsCounters{Enqueued: 2, Delivered: 2}, st.StatsCounters)
	require.NoError(t, m2.Ack(ctx))
	audit(t, q)
}

// Release of a message cancelled in flight deletes it; an expired lease
// cannot be released; a Release run again after a lost reply reports what
// its first run did.
func TestReleaseCancelledExpiredAndRerun(t *testing.T) {
	noLeaks(t)
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "rel2", WithVisibilityTimeout(200*time.Millisecond))
	ctx := context.Background()
	var due time.Time
	for _, id := range []string{"cancelled", "expired", "rerun", "rerun-cancelled"} {
		var err error
		due, err = q.EnqueueAfter(ctx, id, nil, 0)
		require.NoError(t, err)
	}
	untilRedisTime(t, c, due)
	ms, err := q.TakeBatch(ctx, 4)
	require.NoError(t, err)
	require.Len(t, ms, 4)
	by := map[string]*Message{}
	for _, m := range ms {
		by[m.ID] = m
	}
	for _, id := range []string{"cancelled", "rerun-cancelled"} {
		out, err := q.Cancel(ctx, id)
		require.NoError(t, err)
		require.Equal(t, CancelMarked, out)
	}
	require.NoError(t, by["cancelled"].Release(ctx))
	_, err = q.Get(ctx, "cancelled")
	require.ErrorIs(t, err, ErrNotFound, "a cancelled message is deleted, not handed back")

	// The same request twice, as go-redis sends it again after a lost reply.
	for _, id := range []string{"rerun", "rerun-cancelled"} {
		m := by[id]
		first, err := q.run(ctx, scriptReleaseLease, []string{q.itemKey(m.ID), q.ridKey("rid-" + id)}, m.ID, m.token, -1, "rid-"+id)
		require.NoError(t, err)
		again, err := q.run(ctx, scriptReleaseLease, []string{q.itemKey(m.ID), q.ridKey("rid-" + id)}, m.ID, m.token, -1, "rid-"+id)
		require.NoError(t, err)
		require.Equal(t, first, again, id)
		require.NotEqual(t, int64(0), rdb.ToMS(first[0]), id)
	}
	it, err := q.Get(ctx, "rerun")
	require.NoError(t, err)
	require.Equal(t, StateScheduled, it.State)
	require.Equal(t, 0, it.Attempts)

	untilRedisTime(t, c, by["expired"].Deadline.Add(time.Millisecond))
	require.ErrorIs(t, by["expired"].Release(ctx), ErrLeaseLost)
	st, err := q.Stats(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 2, st.Cancelled)
	require.EqualValues(t, 0, st.Nacked)
	audit(t, q)
}

// A worker keeps working across a pause of its queue: while the queue is
// paused it leases nothing (its Take waits, as on an idle queue), and once
// the queue is resumed it handles what is due at once.
func TestWorkerPausedQueue(t *testing.T) {
	noLeaks(t)
	s := startRedis(t)
	q := newQueue(t, s.client(t), "wpause", WithWakeCap(time.Minute))
	ctx := context.Background()
	handled := make(chan string, 10)
	w := NewWorker(q, func(ctx context.Context, m *Message) error {
		handled <- m.ID
		return nil
	}, WorkerOptions{Concurrency: 2})
	runWorker(t, w)
	_, err := q.EnqueueAfter(ctx, "before", nil, 0)
	require.NoError(t, err)
	require.Equal(t, "before", <-handled)
	require.NoError(t, q.Pause(ctx))
	for _, id := range []string{"a", "b", "c"} {
		_, err := q.EnqueueAfter(ctx, id, nil, 0)
		require.NoError(t, err)
	}
	time.Sleep(300 * time.Millisecond)
	require.Empty(t, handled, "handled while paused")
	st, err := q.Stats(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 3, st.Scheduled)
	require.NoError(t, q.Resume(ctx))
	got := map[string]bool{}
	for range 3 {
		select {
		case id := <-handled:
			got[id] = true
		case <-time.After(5 * time.Second):
			t.Fatalf("not handled after Resume (a wait of the wake cap, a minute, would be): %v", got)
		}
	}
	require.Equal(t, map[string]bool{"a": true, "b": true, "c": true}, got)
}

// A Worker keeps the queue's recurring registrations going: with a Worker
// alone, every occurrence of a one-second registration comes, one after
// the other; with NoRecurring only the first (Register enqueues it), as no
// process enqueues the next.
func TestWorkerKeepsRecurringRegistrations(t *testing.T) {
	noLeaks(t)
	for _, keepOff := range []bool{false, true} {
		t.Run(fmt.Sprintf("NoRecurring=%v", keepOff), func(t *testing.T) {
			s := startRedis(t)
			ctx := context.Background()
			name := fmt.Sprintf("wrec%v", keepOff)
			q := newQueue(t, s.client(t), name)
			var mu sync.Mutex
			var at []time.Time
			w := NewWorker(q, func(ctx context.Context, m *Message) error {
				_, t, ok := Occurrence(m.ID)
				if !ok {
					return SkipRetry(fmt.Errorf("not an occurrence: %q", m.ID))
				}
				mu.Lock()
				at = append(at, t)
				mu.Unlock()
				return nil
			}, WorkerOptions{Concurrency: 2, NoRecurring: keepOff})
			runWorker(t, w)
			_, err := q.Register(ctx, "tick", Every(time.Second), nil)
			require.NoError(t, err)
			if keepOff {
				time.Sleep(3500 * time.Millisecond)
				mu.Lock()
				defer mu.Unlock()
				require.Len(t, at, 1, "an occurrence after the first came with no keeper")
				return
			}
			eventually(t, 20*time.Second, "three occurrences", func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(at) >= 3
			})
			mu.Lock()
			defer mu.Unlock()
			for i := 1; i < len(at); i++ {
				require.Equal(t, time.Second, at[i].Sub(at[i-1]), "occurrences %v", at)
			}
		})
	}
}
