package redisq

import (
	"bytes"
	"context"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
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
	scripts []*script
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

// dropProxy forwards connections to a redis-server; when armed with a
// trigger, the first request containing it reaches the server but its reply
// is dropped and the connection closed: a reply lost to a connection kill,
// after which go-redis retries the command on a new connection.
type dropProxy struct {
	l       net.Listener
	target  string
	trigger atomic.Pointer[[]byte]
	fired   atomic.Int64
	wg      sync.WaitGroup
	mu      sync.Mutex
	conns   []net.Conn
}

func newDropProxy(t *testing.T, target string) *dropProxy {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &dropProxy{l: l, target: target}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() {
		_ = l.Close()
		p.mu.Lock()
		for _, c := range p.conns {
			_ = c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return p
}

func (p *dropProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		var drop atomic.Bool
		p.wg.Add(2)
		go func() { // server -> client; a dropped reply closes both ends
			defer p.wg.Done()
			defer c.Close()
			buf := make([]byte, 64<<10)
			for {
				n, err := s.Read(buf)
				if drop.Load() {
					_ = s.Close()
					return
				}
				if n > 0 {
					if _, werr := c.Write(buf[:n]); werr != nil {
						return
					}
				}
				if err != nil {
					return
				}
			}
		}()
		go func() { // client -> server
			defer p.wg.Done()
			defer s.Close()
			buf := make([]byte, 64<<10)
			for {
				n, err := c.Read(buf)
				if n > 0 {
					if tr := p.trigger.Load(); tr != nil && bytes.Contains(buf[:n], *tr) && p.trigger.CompareAndSwap(tr, nil) {
						p.fired.Add(1)
						drop.Store(true)
					}
					if _, werr := s.Write(buf[:n]); werr != nil {
						return
					}
				}
				if err != nil {
					return
				}
			}
		}()
	}
}

func (p *dropProxy) arm(t *testing.T, s string) {
	b := []byte(s)
	p.trigger.Store(&b)
	n := p.fired.Load()
	t.Cleanup(func() { require.Equal(t, n+1, p.fired.Load(), "the reply of %s was dropped", s) })
}
