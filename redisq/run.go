package redisq

import (
	"context"
	"time"

	"github.com/dq-go/delayqueue/redisq/internal/rdb"
)

// ErrNotReplicated is wrapped by the error of an acknowledging write that
// fewer replicas than WithReplicaAcks asks for confirmed within its timeout.
// The write was applied on the master: it may or may not survive a
// failover. Retry it where the call is idempotent (an Enqueue with the same
// id gets ErrDuplicate if it survived, an Ack nil).
var ErrNotReplicated = rdb.ErrNotReplicated

// migrating reports whether err says that the queue's Cluster slot is
// moving (see rdb.Migrating).
func migrating(err error) bool { return rdb.Migrating(err) }

// migrationPause is how long a blocked wait refused while its slot
// migrates pauses before the claim that follows it.
const migrationPause = 50 * time.Millisecond

// pauseForMigration waits migrationPause, or until ctx ends: a blocked wait
// refused while the slot migrates comes back this late instead of spinning.
func (q *Queue) pauseForMigration(ctx context.Context) {
	t := time.NewTimer(migrationPause)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
