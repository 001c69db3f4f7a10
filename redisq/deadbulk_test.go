package redisq

import (
	"context"
	"crypto/sha1"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// afterFirstBulkDead closes ready when the first batch of RequeueAllDead or
// DeleteAllDead (scriptBulkDead) has returned.
type afterFirstBulkDead struct {
	once  sync.Once
	ready chan struct{}
}

func (h *afterFirstBulkDead) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *afterFirstBulkDead) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		// The script ran: EVALSHA of it without an error (NOSCRIPT is one),
		// or the EVAL of its source that follows a NOSCRIPT.
		a := cmd.Args()
		if err == nil && len(a) > 1 {
			ran := fmt.Sprint(a[0]) == "evalsha" && a[1] == scriptBulkDead.Hash()
			if src, ok := a[1].(string); ok && fmt.Sprint(a[0]) == "eval" {
				ran = fmt.Sprintf("%x", sha1.Sum([]byte(src))) == scriptBulkDead.Hash()
			}
			if ran {
				h.once.Do(func() { close(h.ready) })
			}
		}
		return err
	}
}
func (h *afterFirstBulkDead) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// Regression (issue 17, item 10): RequeueAllDead and DeleteAllDead bounded
// their work by the dead set's size at the first batch, so when others
// deleted dead items meanwhile they ran on into items that died after the
// call. With 3,000 dead items, one goroutine dead-letters new items and
// another deletes old dead ones while the call runs: every item the call
// handled was dead when it started, every one dead then was handled (or
// deleted by the other goroutine), and every later death stays dead.
func TestRegressionAllDeadLeavesLaterDeaths(t *testing.T) {
	for _, op := range []string{"requeue", "delete"} {
		t.Run(op, func(t *testing.T) {
			s := startRedis(t, "--appendfsync", "no")
			hook := &afterFirstBulkDead{ready: make(chan struct{})}
			c := s.client(t)
			c.AddHook(hook)
			q := newQueue(t, c, "alldead", WithVisibilityTimeout(time.Hour))
			ctx := context.Background()

			const old, later = 3000, 600
			seed(t, q, ids("old", old))
			var dead []string
			for len(dead) < old {
				ms, err := q.TakeBatch(ctx, MaxBatch)
				require.NoError(t, err)
				for _, m := range ms {
					_, err := m.DeadLetter(ctx, "old")
					require.NoError(t, err)
					dead = append(dead, m.ID)
				}
			}
			seed(t, q, ids("later", later))
			var held []*Message
			for len(held) < later {
				ms, err := q.TakeBatch(ctx, MaxBatch)
				require.NoError(t, err)
				held = append(held, ms...)
			}

			var wg sync.WaitGroup
			wg.Add(2)
			deleted := map[string]bool{} // by the second goroutine
			// Later deaths, once the call's first batch has run.
			go func() {
				defer wg.Done()
				<-hook.ready
				var dw sync.WaitGroup
				for w := range 4 {
					dw.Add(1)
					go func() {
						defer dw.Done()
						for i := w; i < len(held); i += 4 {
							if _, err := held[i].DeadLetter(ctx, "later"); err != nil {
								t.Error(err)
								return
							}
						}
					}()
				}
				dw.Wait()
			}()
			go func() { // deletes of old dead items, latest first
				defer wg.Done()
				<-hook.ready
				for i := old - 1; i >= old/2; i-- {
					id := dead[i]
					switch err := q.DeleteDead(ctx, id); err {
					case nil:
						deleted[id] = true
					case ErrNotFound, ErrNotDead: // the call got there first
					default:
						t.Error(err)
						return
					}
				}
			}()
			var n int64
			var err error
			if op == "requeue" {
				n, err = q.RequeueAllDead(ctx)
			} else {
				n, err = q.DeleteAllDead(ctx)
			}
			require.NoError(t, err)
			wg.Wait()

			for _, m := range held {
				it, err := q.Get(ctx, m.ID)
				require.NoError(t, err, "%s died after the call began and was handled by it", m.ID)
				require.Equal(t, StateDead, it.State, "%s died after the call began and was revived", m.ID)
			}
			var handled int64
			for _, id := range dead {
				it, err := q.Get(ctx, id)
				if deleted[id] {
					require.ErrorIs(t, err, ErrNotFound)
					continue
				}
				handled++
				if op == "requeue" {
					require.NoError(t, err)
					require.Equal(t, StateScheduled, it.State, "%s was dead at the call and not revived", id)
				} else {
					require.ErrorIs(t, err, ErrNotFound, "%s was dead at the call and not deleted", id)
				}
			}
			require.Equal(t, handled, n)
			audit(t, q)
		})
	}
}
