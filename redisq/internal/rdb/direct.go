package rdb

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// The calls that are single commands rather than scripts, where the
// queue's key layout or a reply's shape matters.

// RingWake rings the queue's wake marker: one blocked consumer, in any
// process, pops it and claims.
func (r *Runner) RingWake(ctx context.Context) error {
	return r.Client.ZAdd(ctx, r.Keys.Wake, redis.Z{Score: 0, Member: "w"}).Err()
}

// WaitWake blocks in BZPOPMIN on the queue's wake marker and the private
// key for at most d, on c (the wait client), and reports whether it popped
// the marker (a wake-up meant for some waiter). go-redis' BZPopMin
// truncates its timeout to whole seconds (and extends its read deadline by
// it), so a wait under a second is sent with Do and a fractional timeout,
// at most subsec (kept under the client's ReadTimeout). A timeout is not an
// error.
func (r *Runner) WaitWake(ctx context.Context, c redis.UniversalClient, private string, d, subsec time.Duration) (popped bool, err error) {
	if d >= time.Second {
		z, err := c.BZPopMin(ctx, d.Truncate(time.Second), r.Keys.Wake, private).Result()
		if err == redis.Nil {
			err = nil
		}
		return err == nil && z != nil && z.Key == r.Keys.Wake, err
	}
	d = min(d, subsec)
	secs := strconv.FormatFloat(d.Seconds(), 'f', 3, 64)
	res, err := c.Do(ctx, "bzpopmin", r.Keys.Wake, private, secs).Slice()
	if err == redis.Nil {
		err = nil
	}
	return err == nil && len(res) > 0 && res[0] == r.Keys.Wake, err
}

// ItemState is an item hash's state and member, as Audit reads them.
type ItemState struct {
	State  State
	Member string
	Exists bool
	// LimitKey (lk) and the limits' fields: RateWait (wt: waits for a
	// rate slot), Place (cf: holds a place of its key's concurrency
	// limit), PlaceWait (cq).
	LimitKey        string
	RateWait, Place bool
	PlaceWait       PlaceWait
}

// ItemStates reads the state and member of the item hashes keys, in one
// pipelined round trip.
func (r *Runner) ItemStates(ctx context.Context, keys []string) ([]ItemState, error) {
	cmds := make([]*redis.SliceCmd, len(keys))
	if _, err := r.Client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range keys {
			cmds[i] = p.HMGet(ctx, k, "st", "mem", "lk", "wt", "cq", "cf")
		}
		return nil
	}); err != nil {
		return nil, err
	}
	out := make([]ItemState, len(keys))
	for i, c := range cmds {
		v := c.Val()
		if len(v) < 6 {
			continue
		}
		st, _ := v[0].(string)
		out[i].State = State(st)
		out[i].Member, _ = v[1].(string)
		out[i].Exists = v[0] != nil || v[1] != nil
		out[i].LimitKey, _ = v[2].(string)
		out[i].RateWait, out[i].Place = v[3] != nil, v[5] != nil
		pw, _ := v[4].(string)
		out[i].PlaceWait = PlaceWait(pw)
	}
	return out, nil
}

// MemberID is the id a zset member names: the member is a 16-digit
// sequence number, ":" and the id.
func MemberID(m string) string {
	if len(m) < 17 {
		return m
	}
	return m[17:]
}

// DeadIDs returns the ids of the first n dead items, oldest death first.
func (r *Runner) DeadIDs(ctx context.Context, n int64) ([]string, error) {
	mem, err := r.Client.ZRange(ctx, r.Keys.Dead, 0, n-1).Result()
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(mem))
	for i, m := range mem {
		ids[i] = MemberID(m)
	}
	return ids, nil
}

// Paused reports whether the queue is paused (the sequence hash's paused
// field).
func (r *Runner) Paused(ctx context.Context) (bool, error) {
	return r.Client.HExists(ctx, r.Keys.Seq, "paused").Result()
}

// Exists reports whether any key of the queue's data exists: an item
// (its zset), a counter or the sequence.
func (r *Runner) Exists(ctx context.Context) (bool, error) {
	k := &r.Keys
	n, err := r.Client.Exists(ctx, k.Sched, k.Lease, k.Dead, k.Stats, k.Seq, k.Late).Result()
	return n > 0, err
}
