// Package redisprobe holds the go-redis instruments dqbench-redis -impl redis
// measures redisq with: a hook that counts the commands each tagged caller
// sends, and an estimate of the offset between the local and Redis clocks.
package redisprobe

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Calibrate estimates redisTime - localTime from the TIME round trip with the
// smallest RTT out of rounds, assuming the server read its clock mid-trip:
// the offset is then off by at most rtt/2.
func Calibrate(ctx context.Context, c redis.Cmdable, rounds int) (offset, rtt time.Duration, err error) {
	rtt = time.Duration(1<<62 - 1)
	for range max(rounds, 1) {
		t0 := time.Now()
		rt, err := c.Time(ctx).Result()
		t1 := time.Now()
		if err != nil {
			return 0, 0, err
		}
		if d := t1.Sub(t0); d < rtt {
			rtt = d
			offset = rt.Sub(t0.Add(d / 2))
		}
	}
	return offset, rtt, nil
}

type callerKey struct{}

// WithCaller tags ctx so that a CountHook counts the commands sent under it
// (and any context derived from it) as caller i's.
func WithCaller(ctx context.Context, i int) context.Context {
	return context.WithValue(ctx, callerKey{}, i)
}

// Counts are the commands one caller sent: blocking waits (BZPOPMIN), script
// runs (EVALSHA/EVAL, redisq's claims) and anything else.
type Counts struct{ BZPopMin, Scripts, Other int64 }

// CountHook is a redis.Hook counting commands per caller (see WithCaller)
// and timing the BZPOPMINs among them. Commands from untagged contexts are
// not counted. Pipelined commands count one each.
type CountHook struct {
	mu     sync.Mutex
	per    []counts
	waitNs atomic.Int64
	waits  atomic.Int64
}

type counts struct{ bz, scripts, other atomic.Int64 }

// Reset sizes the counters for callers 0..n-1 and zeroes them. Call it while
// no tagged command is in flight.
func (h *CountHook) Reset(n int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.per = make([]counts, n)
	h.waitNs.Store(0)
	h.waits.Store(0)
}

// Counts returns caller i's counts so far.
func (h *CountHook) Counts(i int) Counts {
	c := h.counter(i)
	if c == nil {
		return Counts{}
	}
	return Counts{BZPopMin: c.bz.Load(), Scripts: c.scripts.Load(), Other: c.other.Load()}
}

// Waits returns how many tagged BZPOPMINs have returned so far and the total
// time they blocked.
func (h *CountHook) Waits() (n int64, blocked time.Duration) {
	return h.waits.Load(), time.Duration(h.waitNs.Load())
}

func (h *CountHook) counter(i int) *counts {
	h.mu.Lock()
	defer h.mu.Unlock()
	if i < 0 || i >= len(h.per) {
		return nil
	}
	return &h.per[i]
}

func (h *CountHook) of(ctx context.Context) *counts {
	i, ok := ctx.Value(callerKey{}).(int)
	if !ok {
		return nil
	}
	return h.counter(i)
}

// count counts cmd and reports whether it is a blocking wait.
func count(c *counts, cmd redis.Cmder) bool {
	switch strings.ToLower(cmd.Name()) {
	case "bzpopmin":
		c.bz.Add(1)
		return true
	case "evalsha", "eval":
		c.scripts.Add(1)
	default:
		c.other.Add(1)
	}
	return false
}

// DialHook implements redis.Hook.
func (h *CountHook) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook implements redis.Hook.
func (h *CountHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c := h.of(ctx)
		if c == nil || !count(c, cmd) {
			return next(ctx, cmd)
		}
		t := time.Now()
		err := next(ctx, cmd)
		h.waitNs.Add(int64(time.Since(t)))
		h.waits.Add(1)
		return err
	}
}

// ProcessPipelineHook implements redis.Hook.
func (h *CountHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if c := h.of(ctx); c != nil {
			for _, cmd := range cmds {
				count(c, cmd)
			}
		}
		return next(ctx, cmds)
	}
}
