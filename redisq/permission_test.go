package redisq

import (
	"context"
	"errors"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// Redis names neither the command a script may not call nor the keys a user
// may not touch (issue 20: "+@read -@write fails every script with an error
// that names the script"); redisq's error does.
func TestPermissionErrorsNameWhatIsMissing(t *testing.T) {
	s := startRedis(t)
	admin := s.client(t)
	ctx := context.Background()
	q := newQueue(t, admin, "perm")
	_, err := q.EnqueueAfter(ctx, "a", nil, 0)
	require.NoError(t, err)
	require.NoError(t, admin.Do(ctx, "ACL", "SETUSER", "notime", "on", ">pw", "~*", "&*", "+@all", "-time").Err())
	require.NoError(t, admin.Do(ctx, "ACL", "SETUSER", "otherkeys", "on", ">pw", "~{dq:other}:*", "&*", "+@all").Err())

	notime := s.client(t, func(o *redis.Options) { o.Username, o.Password = "notime", "pw" })
	nq, err := New(ctx, notime, "perm", WithEvictionCheck(EvictionIgnore))
	require.NoError(t, err) // the upgrade script reads no time
	defer nq.Close()
	_, err = nq.Stats(ctx)
	var pe *PermissionError
	require.True(t, errors.As(err, &pe), "%v", err)
	require.Equal(t, "TIME", pe.Command)
	require.Equal(t, "perm", pe.Queue)
	require.ErrorContains(t, err, "may not run TIME")
	require.ErrorContains(t, err, "+time")
	require.ErrorContains(t, err, "can't run this command", "Redis' own words stay")

	other := s.client(t, func(o *redis.Options) { o.Username, o.Password = "otherkeys", "pw" })
	_, err = New(ctx, other, "perm", WithEvictionCheck(EvictionIgnore), WithoutRegistry())
	require.True(t, errors.As(err, &pe), "%v", err)
	require.Empty(t, pe.Command)
	require.ErrorContains(t, err, `may not use the keys of queue "perm"`)

	// Any other error is left as it is.
	require.NoError(t, q.permissionError(nil))
	plain := errors.New("x")
	require.Equal(t, plain, q.permissionError(plain))
}
