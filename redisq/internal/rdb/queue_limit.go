package rdb

import "context"

var (
	scriptQueueRateLimit = newScript("queue_rate_limit", kSeq, kWake).acked()
	scriptQueueRateState = newScript("queue_rate_state", kSeq)
)

// SetQueueRateLimit sets the queue's own rate limit to n claims per per
// µs, or removes it when n is 0 (lua/queue_rate_limit.lua).
func (r *Runner) SetQueueRateLimit(ctx context.Context, n, per int64) error {
	_, err := r.run(ctx, scriptQueueRateLimit, nil, n, per)
	return err
}

// QueueRateState reads the queue's own rate limit and its use
// (lua/queue_rate_state.lua), as LimitStates a key's (Key "", Waiting
// and LastSlot 0); now is Redis TIME in µs.
func (r *Runner) QueueRateState(ctx context.Context) (now int64, st LimitState, err error) {
	res, err := r.run(ctx, scriptQueueRateState, []string{r.Keys.QueueRate})
	if err != nil {
		return 0, LimitState{}, err
	}
	st = LimitState{N: toInt(res[1]), Per: toInt(res[2]), Used: toInt(res[3]), Oldest: ToMS(res[4])}
	if st.N > 0 {
		st.Room = ToMS(res[5])
	}
	return toInt(res[0]), st, nil
}
