package redisq

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// HandleFunc registers a func as Handle does: Serve routes to it by kind,
// and a second handler of the kind panics.
func TestMuxHandleFunc(t *testing.T) {
	mux := NewMux()
	errA := errors.New("a ran")
	mux.HandleFunc("a", func(ctx context.Context, m *Message) error { return errA })
	require.Equal(t, []string{"a"}, mux.Kinds())
	require.ErrorIs(t, mux.Serve(context.Background(), &Message{Job: Job{Kind: "a"}}), errA)
	var unknown *UnknownKindError
	require.ErrorAs(t, mux.Serve(context.Background(), &Message{Job: Job{Kind: "b"}}), &unknown)
	require.Panics(t, func() { mux.HandleFunc("a", DefaultNotFound) })
	require.Panics(t, func() { mux.HandleFunc("c", nil) })
}
