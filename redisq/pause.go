package redisq

import (
	"context"
)

// Pause stops deliveries of the queue, in every process: while it is
// paused no Take, TakeBatch or AckTake leases anything (AckTake still acks),
// and blocked consumers keep waiting on the wake marker as they do on an
// idle queue, at no more cost; Stats.PausedSince says since when. Enqueues, cancels, acks, nacks, lease
// extensions and the admin calls keep working; leases that expire meanwhile
// are returned to the schedule when the queue is resumed. The pause is
// stored in Redis, so it outlives the processes (Destroy ends it). Pausing
// a paused queue changes nothing. One round trip. It returns ErrClosed after
// Close, or a Redis/context error.
func (q *Queue) Pause(ctx context.Context) error {
	return q.setPaused(ctx, scriptPause)
}

// Resume ends a pause: the wake marker is rung, so blocked consumers wake at
// once and claim what is due. Resuming a queue that is not paused changes
// nothing. One round trip; errors as Pause.
func (q *Queue) Resume(ctx context.Context) error {
	return q.setPaused(ctx, scriptResume)
}

// Paused reports whether the queue is paused (Stats reports it too). One
// round trip.
func (q *Queue) Paused(ctx context.Context) (bool, error) {
	if q.isClosed() {
		return false, ErrClosed
	}
	return q.client.HExists(ctx, q.keys[5], "paused").Result()
}

func (q *Queue) setPaused(ctx context.Context, s *script) error {
	if q.isClosed() {
		return ErrClosed
	}
	_, err := q.run(ctx, s, nil)
	return err
}

// pause: marks the sequence hash (see luaClaim) with the time of the
// pause (ms; an earlier version wrote 1). {1} paused, {0} already.
var scriptPause = newScript(luaKeys+`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
return {redis.call('HSETNX', K_SEQ, 'paused', string.format('%d', now))}
`, kSeq).acked()

// resume: unmarks it and rings the marker for the waiting consumers. {1}
// resumed, {0} was not paused.
var scriptResume = newScript(luaKeys+`
if redis.call('HDEL', K_SEQ, 'paused') == 0 then return {0} end
redis.call('ZADD', K_WAKE, 0, 'w')
return {1}
`, kSeq, kWake).acked()
