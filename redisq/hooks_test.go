package redisq

import (
	"context"
	"net"
	"strings"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

func splitLines(s string) []string { return strings.Split(strings.ReplaceAll(s, "\r", ""), "\n") }

// denyConfig makes CONFIG fail as it does on managed Redis services.
type denyConfig struct{}

// replyError is an error reply from the server, as go-redis reports one
// (it implements redis.Error).
type replyError string

func (e replyError) Error() string { return string(e) }
func (replyError) RedisError()     {}

func (denyConfig) DialHook(next redis.DialHook) redis.DialHook { return next }
func (denyConfig) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if strings.EqualFold(cmd.Name(), "config") {
			err := replyError("ERR unknown command 'CONFIG'")
			cmd.SetErr(err)
			return err
		}
		return next(ctx, cmd)
	}
}
func (denyConfig) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// countHook counts commands by name.
type countHook struct{ total, bzpopmin, eval atomic.Int64 }

func (*countHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) { return next(ctx, network, addr) }
}
func (h *countHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.total.Add(1)
		switch strings.ToLower(cmd.Name()) {
		case "bzpopmin":
			h.bzpopmin.Add(1)
		case "evalsha", "eval":
			h.eval.Add(1)
		}
		return next(ctx, cmd)
	}
}
func (h *countHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// reloadMidPipeline makes a pipeline of several commands meet a script cache
// that another client refills while it runs: SCRIPT FLUSH before the first
// command, the scripts loaded again before the rest, as after a restart
// with other clients busy.
type reloadMidPipeline struct {
	side    redis.UniversalClient
	scripts []*redis.Script
}

func (h reloadMidPipeline) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h reloadMidPipeline) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return next
}
func (h reloadMidPipeline) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) < 2 {
			return next(ctx, cmds)
		}
		if err := h.side.ScriptFlush(ctx).Err(); err != nil {
			return err
		}
		err := next(ctx, cmds[:1])
		for _, s := range h.scripts {
			if lerr := s.Load(ctx, h.side).Err(); lerr != nil {
				return lerr
			}
		}
		if rerr := next(ctx, cmds[1:]); err == nil {
			err = rerr
		}
		return err
	}
}
