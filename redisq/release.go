package redisq

import (
	"context"

	"github.com/dq-go/delayqueue/redisq/internal/rdb"
)

// Release hands the message back without counting this delivery: the item
// goes back to the schedule at the due time it had, so it is due at once
// (ahead of the items due after it), with Attempts as it was before this
// lease, and a blocked consumer in any process is woken for it. It is for
// work a consumer took but will not do, such as a worker shutting down:
// another consumer gets the item within a round trip instead of after the
// visibility timeout, and it does not move the item towards the dead set.
// Release counts neither as a Nack nor as an expiry in Stats (the next
// claim counts as one more delivery, and its lateness includes the time
// the item was held). An item cancelled in flight is deleted instead. It
// blocks for one round trip, O(log n), and returns nil, ErrLeaseLost (the
// lease had expired or moved on; nothing changes), or a Redis/context error
// (the release may or may not have been applied). Like a Nack, a Release
// whose reply was lost and that go-redis runs again reports what the first
// run did. Release works after Close.
func (m *Message) Release(ctx context.Context) error {
	s, err := m.q.db.ReleaseLease(ctx, m.lease())
	if err != nil {
		return err
	}
	if s == rdb.SettledLost {
		return ErrLeaseLost
	}
	return nil
}
