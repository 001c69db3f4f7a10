package redisq

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

type digestArgs struct {
	List string `json:"list"`
}

// A typed registration: every occurrence carries the value encoded, the
// kind and its defaults, and the kind's handler decodes it. The untyped
// shape a porter writes first, a kind with no payload, is warned of at
// Register, before its first occurrence is dead-lettered.
func TestJobKindRegister(t *testing.T) {
	noLeaks(t)
	s := startRedis(t)
	c := s.client(t)
	ctx := context.Background()
	var logs syncBuffer
	q := newQueue(t, c, "typed-rec", WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	digest := JobKind[digestArgs]{Name: "typed-digest", Defaults: []JobOption{MaxAttempts(3), Header("src", "rec")}}
	got := make(chan digestArgs, 1)
	mux := NewMux()
	digest.Handle(mux, func(ctx context.Context, m *Message, d digestArgs) error {
		got <- d
		return nil
	})

	_, err := q.Register(ctx, "untyped", Every(time.Hour), nil, RegisterJob(Job{Kind: "typed-digest"}))
	require.NoError(t, err)
	warned := logs.String()
	require.Contains(t, warned, "level=WARN")
	require.Contains(t, warned, "does not decode as redisq.digestArgs")
	require.Contains(t, warned, "JobKind[redisq.digestArgs].Register")
	require.Contains(t, warned, "registration=untyped")
	_, err = q.Register(ctx, "fine", Every(time.Hour), []byte(`{"list":"x"}`), RegisterJob(Job{Kind: "typed-digest"}))
	require.NoError(t, err)
	_, err = q.Register(ctx, "other", Every(time.Hour), nil, RegisterJob(Job{Kind: "other-kind"}))
	require.NoError(t, err)
	require.Equal(t, warned, logs.String(), "a payload that decodes, or a kind without a typed handler, is no warning")

	out, err := digest.Register(ctx, q, "daily", Every(time.Hour), digestArgs{List: "all"},
		FirstAt(redisNow(t, c).Add(-time.Second)), RegisterJob(Job{Kind: "other", Timeout: time.Minute}))
	require.NoError(t, err)
	require.Equal(t, RegistrationCreated, out)
	r, err := q.Registration(ctx, "daily")
	require.NoError(t, err)
	require.Equal(t, Job{Kind: "typed-digest", Timeout: time.Minute}, r.Job, "RegisterJob replaces the defaults, not the kind")
	out, err = digest.Register(ctx, q, "daily", Every(time.Hour), digestArgs{List: "all"}, FirstAt(redisNow(t, c).Add(-time.Second)))
	require.NoError(t, err)
	require.Equal(t, RegistrationUpdated, out)
	r, err = q.Registration(ctx, "daily")
	require.NoError(t, err)
	require.Equal(t, "typed-digest", r.Job.Kind)
	require.Equal(t, 3, r.Job.MaxAttempts)
	require.Equal(t, map[string]string{"src": "rec"}, r.Job.Headers)
	require.JSONEq(t, `{"list":"all"}`, string(r.Payload))

	w := NewWorker(q, mux.Serve, WorkerOptions{Concurrency: 1, Heartbeat: -1})
	runWorker(t, w)
	select {
	case d := <-got:
		require.Equal(t, digestArgs{List: "all"}, d)
	case <-time.After(20 * time.Second):
		t.Fatal("the occurrence was not handled")
	}
}
