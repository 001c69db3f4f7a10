package redisq

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Logging logs one record per handled message, with the message's queue,
// id and attempt, the outcome and the duration, at Info for success and
// Warn with the error otherwise; a Message logs as that group.
func TestLoggingMiddleware(t *testing.T) {
	noLeaks(t)
	s := startRedis(t)
	q := newQueue(t, s.client(t), "wlog", WithMaxAttempts(1))
	ctx := context.Background()
	for _, id := range []string{"ok", "bad", "boom"} {
		_, err := q.EnqueueAfter(ctx, id, nil, 0)
		require.NoError(t, err)
	}
	var buf syncBuffer
	l := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	done := make(chan struct{}, 3)
	w := NewWorker(q, func(ctx context.Context, m *Message) error {
		defer func() { done <- struct{}{} }()
		l.DebugContext(ctx, "in handler", "message", m)
		switch m.ID {
		case "bad":
			return SkipRetry(errors.New("bad input"))
		case "boom":
			panic("boom")
		}
		return nil
	}, WorkerOptions{Concurrency: 1, Logger: l, Middleware: []Middleware{Logging(l)}})
	runWorker(t, w)
	for range 3 {
		<-done
	}
	eventually(t, 10*time.Second, "settled", func() bool {
		st, err := q.Stats(ctx)
		require.NoError(t, err)
		return st.Scheduled+st.InFlight == 0
	})
	recs := map[string]map[string]any{}
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var r map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &r), line)
		if r["msg"] == "redisq: handled" || r["msg"] == "redisq: handler failed" {
			recs[r["id"].(string)] = r
		}
	}
	require.Len(t, recs, 3)
	for id, want := range map[string][3]string{
		"ok":   {"INFO", "ok", ""},
		"bad":  {"WARN", "skip_retry", "bad input"},
		"boom": {"WARN", "panic", "panic: boom"},
	} {
		r := recs[id]
		require.Equal(t, want[0], r["level"], id)
		require.Equal(t, "wlog", r["queue"], id)
		require.EqualValues(t, 1, r["attempt"], id)
		require.Equal(t, want[1], r["outcome"], id)
		require.Contains(t, r, "duration", id)
		if want[2] != "" {
			require.Equal(t, want[2], r["err"], id)
		} else {
			require.NotContains(t, r, "err", id)
		}
	}
	// A Message logs as a group of its queue, id and attempt.
	require.Contains(t, buf.String(), `"msg":"in handler","message":{"queue":"wlog","id":"ok","attempt":1}`)
}
