package redisq

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// Regression (issue 17, item 12): a NackReason truncated to MaxReasonLen was
// stored behind "max attempts: ", 1,038 bytes. Every cause of death is now
// at most MaxReasonLen bytes, and truncation keeps UTF-8 text valid.
func TestDeadReasonsAreAtMostMaxReasonLen(t *testing.T) {
	s := startRedis(t)
	q := newQueue(t, s.client(t), "reasons", WithMaxAttempts(1))
	ctx := context.Background()
	long := strings.Repeat("é", MaxReasonLen) // 2 bytes each: any cut may split one
	ms := takeNow(t, q, "nack", "dead", "short")
	r, err := ms[0].NackWith(ctx, NackReason(long))
	require.NoError(t, err)
	require.Equal(t, NackDeadLettered, r.Outcome)
	_, err = ms[1].DeadLetter(ctx, "x"+long)
	require.NoError(t, err)
	_, err = ms[2].NackWith(ctx, NackReason("bad input"))
	require.NoError(t, err)

	for id, prefix := range map[string]string{"nack": "max attempts: é", "dead": "xé"} {
		it, err := q.Get(ctx, id)
		require.NoError(t, err)
		require.LessOrEqual(t, len(it.DeadReason), MaxReasonLen, id)
		require.GreaterOrEqual(t, len(it.DeadReason), MaxReasonLen-1, "%s: truncated to more than a split character", id)
		require.True(t, strings.HasPrefix(it.DeadReason, prefix), id)
		require.True(t, utf8.ValidString(it.DeadReason), "%s: truncation split a character", id)
	}
	it, err := q.Get(ctx, "short")
	require.NoError(t, err)
	require.Equal(t, "max attempts: bad input", it.DeadReason)
}

func TestTruncReason(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"abc", 3, "abc"},
		{"abcd", 3, "abc"},
		{"aé", 2, "a"},                      // é is 2 bytes: not split
		{"a€b", 3, "a"},                     // € is 3 bytes
		{"a€b", 4, "a€"},                    // whole
		{"😀😀", 5, "😀"},                      // 4 bytes each
		{"\xff\xff\xff\xff", 2, "\xff\xff"}, // not UTF-8: bytes
		{"\x80\x80\x80\x80\x80", 4, "\x80\x80\x80\x80"},
	} {
		require.Equal(t, c.want, truncReason(c.in, c.n), "%q %d", c.in, c.n)
	}
}

// Regression (issue 17, item 12): AckMany([]*Message{nil}) panicked with a
// nil dereference. A nil element gets its own error; the others are acked.
func TestAckManyNilMessage(t *testing.T) {
	s := startRedis(t)
	q := newQueue(t, s.client(t), "acknil")
	ctx := context.Background()
	require.NotPanics(t, func() {
		errs := q.AckMany(ctx, []*Message{nil})
		require.Len(t, errs, 1)
		require.ErrorContains(t, errs[0], "redisq: AckMany: message 0 is nil")
	})
	ms := takeNow(t, q, "a", "b")
	errs := q.AckMany(ctx, []*Message{ms[0], nil, ms[1], nil})
	require.NoError(t, errs[0])
	require.ErrorContains(t, errs[1], "message 1 is nil")
	require.NoError(t, errs[2])
	require.ErrorContains(t, errs[3], "message 3 is nil")
	audit(t, q)
	n, err := q.Stats(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 2, n.Acked)
}
