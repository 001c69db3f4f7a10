package redisq

import "context"

// release: ARGV[2] id, ARGV[3] token, ARGV[4] request id. {0} lease lost,
// {1, due} back in sched at its due time with the lease's attempt
// uncounted, {3} deleted because it was cancelled while in flight; a rerun
// of the same request returns the first run's reply. Neither nacked nor
// expired is counted: the item was not tried. O(log n).
//
// The item goes back under a new member (to_sched), as after a Nack: the
// member's number is the next lease's token, so the consumer that released
// it cannot settle the next lease. Its score is the due time it had, which
// the claim did not change: it is due at once, ahead of every item due
// after it, and behind the items due at the same millisecond.
var scriptReleaseLease = newScript(luaCommon+luaLease+`
redis.call('ZREM', K_LEASE, f[4])
if f[6] == '1' then
  redis.call('DEL', h)
  redis.call('HINCRBY', K_STATS, 'cancelled', 1)
  return done_gone({3})
end
local att = (tonumber(f[5]) or 1) - 1
if att < 0 then att = 0 end
local due = tonumber(redis.call('HGET', h, 'due')) or now
if due > now then due = now end
to_sched(h, ARGV[2], due, 'att', att, 'rq', ARGV[4], 'rr', enc({1, due}))
return {1, due}
`, kSched, kLease, kWake, kStats, kSeq).withRID().acked()

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
	r, err := m.q.runOnce(ctx, scriptReleaseLease, []string{m.q.itemKey(m.ID)}, m.ID, m.token)
	if err != nil {
		return err
	}
	if toInt(r[0]) == 0 {
		return ErrLeaseLost
	}
	return nil
}
