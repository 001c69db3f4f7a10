package redisq

import (
	"context"
	"fmt"
	"time"
)

// UniqueWindow is a unique key's window that an enqueue took (see Unique).
type UniqueWindow struct {
	Key string
	// ID is the item whose enqueue took the window (it may be gone since:
	// the window outlives it).
	ID string
	// Until is when the window ends, by the Redis clock: an enqueue of
	// Key from then on is stored.
	Until time.Time
}

// UniqueWindow returns key's window while it is held, or ErrNotFound. One
// round trip; it changes nothing.
func (q *Queue) UniqueWindow(ctx context.Context, key string) (UniqueWindow, error) {
	if err := q.checkUniqueKey(key); err != nil {
		return UniqueWindow{}, err
	}
	id, end, ok, err := q.db.UniqueWindow(ctx, key)
	if err != nil {
		return UniqueWindow{}, err
	}
	if !ok {
		return UniqueWindow{}, ErrNotFound
	}
	return UniqueWindow{Key: key, ID: id, Until: msTime(end)}, nil
}

// ReleaseUnique ends key's window now, so that the next enqueue of the key
// is stored (an operator's action: a window that should not hold). It
// reports whether a window was held; the item that took it is not changed.
func (q *Queue) ReleaseUnique(ctx context.Context, key string) (bool, error) {
	if err := q.checkUniqueKey(key); err != nil {
		return false, err
	}
	return q.db.ReleaseUnique(ctx, key)
}

func (q *Queue) checkUniqueKey(key string) error {
	if key == "" || len(key) > MaxUniqueKeyLen {
		return fmt.Errorf("redisq: a unique key must be 1 to %d bytes (got %d)", MaxUniqueKeyLen, len(key))
	}
	if q.isClosed() {
		return ErrClosed
	}
	return nil
}
