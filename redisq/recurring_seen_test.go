package redisq

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Issue 24, item 3: registrations outlive the code that made them. A
// registration is seen when Register stores or confirms it, and then by
// the keeper of the Queue value that registered it; a keeper of another
// value (a process whose code no longer registers it) does not see it.
func TestRegistrationSeenByItsRegisteringProcess(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	ctx := context.Background()
	mine := newQueue(t, c, "rec")
	other := newQueue(t, c, "rec")
	seen := func(name string) time.Time {
		r, err := other.Registration(ctx, name)
		require.NoError(t, err)
		return r.Seen
	}

	before := redisNow(t, c).Truncate(time.Millisecond)
	_, err := mine.Register(ctx, "kept", Every(time.Hour), nil)
	require.NoError(t, err)
	_, err = mine.Register(ctx, "gone", Every(time.Hour), nil)
	require.NoError(t, err)
	first := seen("kept")
	require.False(t, first.Before(before), "seen at Register: %v, before %v", first, before)
	require.False(t, first.After(redisNow(t, c)))

	// Another process's keeper keeps every registration but sees none.
	stopOther := keep(t, other)
	time.Sleep(50 * time.Millisecond)
	stopOther()
	require.True(t, seen("kept").Equal(first), "a keeper that did not register it does not see it")

	// The registering value's keeper sees its own, at its start and
	// every seenEvery after; one unregistered elsewhere is not revived.
	_, err = other.Unregister(ctx, "gone")
	require.NoError(t, err)
	old := seenEvery
	seenEvery = 10 * time.Millisecond
	t.Cleanup(func() { seenEvery = old })
	time.Sleep(5 * time.Millisecond)
	keep(t, mine)
	eventually(t, 10*time.Second, "the keeper records the registration as seen", func() bool {
		return seen("kept").After(first)
	})
	_, err = other.Registration(ctx, "gone")
	require.ErrorIs(t, err, ErrNotFound, "seeing does not bring back an unregistered name")
	n, err := c.Exists(ctx, mine.recKey("gone")).Result()
	require.NoError(t, err)
	require.Zero(t, n)
}

func TestRegistrationOrphaned(t *testing.T) {
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	require.True(t, Registration{}.Orphaned(now), "never seen by this version")
	require.False(t, Registration{Seen: now.Add(-time.Minute)}.Orphaned(now))
	require.False(t, Registration{Seen: now.Add(-OrphanAfter)}.Orphaned(now))
	require.True(t, Registration{Seen: now.Add(-OrphanAfter - time.Millisecond)}.Orphaned(now))
}
