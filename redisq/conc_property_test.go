package redisq

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// concRun numbers the queues of TestConcurrencyLimitProperty.
var concRun atomic.Int64

// Random histories of everything that touches a limited item (enqueue,
// debounce, claims by both scripts, each way a lease ends, Extend, Cancel,
// Reschedule, Schedule with another key, RunNow, requeue, Purge, Pause,
// limits raised, lowered and removed, a rate limit on the same key,
// leases that expire) against the contract: a claim never leases an item
// of a key beyond its limit (counting the live leases that hold a place),
// and after every step Audit finds the limits' indexes whole and no item
// waiting for a place that is free; at the end every item goes.
func TestConcurrencyLimitProperty(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	rapid.Check(t, func(rt *rapid.T) {
		ctx := context.Background()
		vis := time.Minute
		if rapid.Bool().Draw(rt, "expiring leases") {
			vis = 150 * time.Millisecond
		}
		q, err := New(ctx, c, "conc-prop-"+strconv.FormatInt(concRun.Add(1), 10), WithVisibilityTimeout(vis),
			WithEvictionCheck(EvictionIgnore), WithoutRegistry())
		require.NoError(rt, err)
		defer func() {
			_, _ = q.Destroy(ctx)
			_ = q.Close()
		}()
		keys := []string{"a", "b", "", "free"}
		lim := map[string]int{"a": 2, "b": 1, "": 3}
		for k, n := range lim {
			require.NoError(rt, q.SetConcurrencyLimit(ctx, k, n))
		}
		rate := rapid.Bool().Draw(rt, "rate limit on b")
		if rate {
			require.NoError(rt, q.SetRateLimit(ctx, "b", RateLimit{N: 3, Per: 300 * time.Millisecond}))
		}
		held := map[string]*Message{}
		var ids []string
		var trace []string
		// placed counts, per key, the live leases that hold a place.
		placed := func() map[string]int {
			n := map[string]int{}
			tm, err := c.Time(ctx).Result()
			require.NoError(rt, err)
			now := tm.UnixMilli()
			for _, key := range []string{"a", "b", ""} {
				_, _, cf, _, _ := q.db.Keys.LimitIndexes(key)
				v, err := c.ZCount(ctx, cf, "("+strconv.FormatInt(now, 10), "+inf").Result()
				require.NoError(rt, err)
				n[key] = int(v)
			}
			return n
		}
		// claimed checks the items a claim leased against the limits.
		claimed := func(ms []*Message) {
			after := placed()
			for _, m := range ms {
				held[m.ID] = m
				if k := lim[m.LimitKey]; k > 0 && after[m.LimitKey] > k {
					rt.Fatalf("key %q: %d places taken, over its limit %d, after a claim of %s\n%v", m.LimitKey, after[m.LimitKey], k, m.ID, trace)
				}
			}
		}
		pickHeld := func(t *rapid.T) *Message {
			if len(held) == 0 {
				t.Skip("nothing held")
			}
			hs := make([]string, 0, len(held))
			for id := range held {
				hs = append(hs, id)
			}
			slices.Sort(hs)
			m := held[rapid.SampledFrom(hs).Draw(t, "held")]
			delete(held, m.ID)
			return m
		}
		pickID := func(t *rapid.T) string {
			if len(ids) == 0 {
				t.Skip("no item yet")
			}
			return rapid.SampledFrom(ids).Draw(t, "id")
		}
		take := func(n int) []*Message {
			tctx, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
			defer cancel()
			ms, err := q.TakeBatch(tctx, n)
			if err != nil {
				require.ErrorIs(rt, err, context.DeadlineExceeded)
				return nil
			}
			claimed(ms)
			return ms
		}
		step := func(format string, a ...any) { trace = append(trace, fmt.Sprintf(format, a...)) }
		rt.Repeat(map[string]func(*rapid.T){
			"add": func(t *rapid.T) {
				id := "i" + strconv.Itoa(len(ids))
				key := rapid.SampledFrom(keys).Draw(t, "key")
				at := time.Now().Add(time.Duration(rapid.IntRange(-2000, 30).Draw(t, "due ms")) * time.Millisecond)
				it := EnqueueItem{ID: id, At: at, Job: Job{LimitKey: key}}
				if rapid.IntRange(0, 9).Draw(t, "debounce") == 0 {
					it.Job.UniqueKey, it.Job.UniqueFor, it.Job.Debounce = "u"+key, 50*time.Millisecond, true
				}
				_, err := q.Add(ctx, it)
				require.NoError(t, err)
				ids = append(ids, id)
				step("add %s %q", id, key)
			},
			"take": func(t *rapid.T) {
				n := rapid.IntRange(1, 5).Draw(t, "n")
				step("take %d: %d", n, len(take(n)))
			},
			"ack-take": func(t *rapid.T) {
				m := pickHeld(t)
				tctx, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
				nm, err := q.AckTake(tctx, m)
				cancel()
				if err == nil {
					claimed([]*Message{nm})
				}
				step("acktake %s: %v", m.ID, err)
			},
			"ack": func(t *rapid.T) {
				m := pickHeld(t)
				step("ack %s: %v", m.ID, m.Ack(ctx))
			},
			"ack-many": func(t *rapid.T) {
				var ms []*Message
				for range rapid.IntRange(1, 4).Draw(t, "n") {
					if len(held) > 0 {
						ms = append(ms, pickHeld(t))
					}
				}
				step("ackmany %d: %v", len(ms), errors.Join(q.AckMany(ctx, ms)...))
			},
			"nack": func(t *rapid.T) {
				m := pickHeld(t)
				step("nack %s: %v", m.ID, m.NackAfter(ctx, time.Duration(rapid.IntRange(0, 1).Draw(t, "later"))*20*time.Millisecond))
			},
			"release": func(t *rapid.T) {
				m := pickHeld(t)
				step("release %s: %v", m.ID, m.Release(ctx))
			},
			"dead-letter": func(t *rapid.T) {
				m := pickHeld(t)
				_, err := m.DeadLetter(ctx, "x")
				step("dead %s: %v", m.ID, err)
			},
			"extend": func(t *rapid.T) {
				m := pickHeld(t)
				held[m.ID] = m
				step("extend %s: %v", m.ID, m.Extend(ctx, time.Minute))
			},
			"cancel": func(t *rapid.T) {
				id := pickID(t)
				out, err := q.Cancel(ctx, id)
				step("cancel %s: %v %v", id, out, err)
			},
			"reschedule": func(t *rapid.T) {
				id := pickID(t)
				step("reschedule %s: %v", id, q.Reschedule(ctx, id, time.Now().Add(time.Duration(rapid.IntRange(0, 1).Draw(t, "later"))*20*time.Millisecond)))
			},
			"schedule": func(t *rapid.T) {
				id, key := pickID(t), rapid.SampledFrom(keys).Draw(t, "key")
				_, err := q.ScheduleItem(ctx, EnqueueItem{ID: id, At: time.Now(), Job: Job{LimitKey: key}})
				step("schedule %s %q: %v", id, key, err)
			},
			"run-now": func(t *rapid.T) {
				id := pickID(t)
				res, err := q.RunNow(ctx, id)
				step("runnow %s: %v %v", id, res.Outcome, err)
			},
			"limit": func(t *rapid.T) {
				key := rapid.SampledFrom([]string{"a", "b", ""}).Draw(t, "limited key")
				k := rapid.IntRange(0, 3).Draw(t, "k")
				require.NoError(t, q.SetConcurrencyLimit(ctx, key, k))
				lim[key] = k
				step("limit %q %d", key, k)
			},
			"rate": func(t *rapid.T) {
				if !rate {
					t.Skip("no rate limit")
				}
				n := rapid.IntRange(0, 3).Draw(t, "n")
				step("rate b %d: %v", n, q.SetRateLimit(ctx, "b", RateLimit{N: n, Per: 300 * time.Millisecond}))
			},
			"requeue-dead": func(t *rapid.T) {
				n, err := q.RequeueAllDead(ctx)
				step("requeue %d %v", n, err)
			},
			"pause": func(t *rapid.T) {
				if rapid.Bool().Draw(t, "pause") {
					step("pause %v", q.Pause(ctx))
				} else {
					step("resume %v", q.Resume(ctx))
				}
			},
			"purge": func(t *rapid.T) {
				n, err := q.Purge(ctx, StateScheduled)
				step("purge %d %v", n, err)
			},
			"sleep": func(t *rapid.T) {
				time.Sleep(time.Duration(rapid.IntRange(0, 40).Draw(t, "ms")) * time.Millisecond)
			},
			"": func(t *rapid.T) {
				r, err := q.Audit(ctx)
				require.NoError(t, err)
				if !r.OK() {
					t.Fatalf("audit: %v\n%v", r.Problems, trace)
				}
			},
		})
		// Every item goes.
		require.NoError(rt, q.Resume(ctx))
		deadline := time.Now().Add(20 * time.Second)
		for {
			var ms []*Message
			for _, m := range held {
				ms = append(ms, m)
			}
			held = map[string]*Message{}
			_ = q.AckMany(ctx, ms)
			take(100)
			st, err := q.Stats(ctx)
			require.NoError(rt, err)
			if st.Scheduled == 0 && st.InFlight == 0 && len(held) == 0 {
				break
			}
			if time.Now().After(deadline) {
				rt.Fatalf("does not drain: %+v\n%v", st, trace)
			}
		}
		r, err := q.Audit(ctx)
		require.NoError(rt, err)
		require.True(rt, r.OK(), "audit: %v", r.Problems)
	})
}
