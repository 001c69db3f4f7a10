package redisq

import (
	"bufio"
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dq-go/delayqueue/redisq/redistest"
	"github.com/stretchr/testify/require"
)

// monitor records what a server runs (MONITOR), from when it returns until
// the test ends.
type monitor struct {
	mu    sync.Mutex
	lines []string
}

func startMonitor(t *testing.T, addr string) *monitor {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	_, err = conn.Write([]byte("MONITOR\r\n"))
	require.NoError(t, err)
	r := bufio.NewReader(conn)
	ok, err := r.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "+OK\r\n", ok)
	m := &monitor{}
	go func() {
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			m.mu.Lock()
			m.lines = append(m.lines, strings.TrimSpace(line))
			m.mu.Unlock()
		}
	}()
	return m
}

func (m *monitor) snapshot() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.lines...)
}

// monitorCommand is the command name of a MONITOR line
// (`+1700000000.123456 [0 127.0.0.1:5000] "evalsha" "..."`), lower case.
func monitorCommand(line string) string {
	_, rest, ok := strings.Cut(line, `] "`)
	if !ok {
		return ""
	}
	name, _, _ := strings.Cut(rest, `"`)
	return strings.ToLower(name)
}

// Every command a queue sends goes to the master of its slot, TIME
// included (Register, RunNow of an occurrence, ResumeRecurring and Audit
// read it): the other masters see none but the registry's (RegistryKey
// lives in a slot of its own) and the client's own topology commands.
// The queue's clock is its master's.
func TestClusterQueueSendsOnlyToItsMaster(t *testing.T) {
	c := redistest.NewClusterWith(t, redistest.ClusterOptions{Masters: 3})
	ctx := context.Background()
	cc := clusterClient(t, c)
	const name = "mon"
	master, err := c.MasterOf(ctx, "{dq:"+name+"}:sched")
	require.NoError(t, err)
	mons := map[*redistest.Server]*monitor{}
	for _, s := range c.Servers {
		mons[s] = startMonitor(t, s.Addr)
	}

	q := newQueue(t, cc, name, WithVisibilityTimeout(time.Minute))
	_, err = q.EnqueueAfter(ctx, "a", []byte("a"), 0)
	require.NoError(t, err)
	m, err := q.Take(ctx)
	require.NoError(t, err)
	require.NoError(t, m.Ack(ctx))
	_, err = q.Register(ctx, "r", Every(time.Hour), nil)
	require.NoError(t, err)
	items := scheduledOf(t, q, "r")
	require.Len(t, items, 1)
	res, err := q.RunNow(ctx, items[0].ID)
	require.NoError(t, err)
	require.Equal(t, RunNowExtra, res.Outcome)
	_, err = q.PauseRecurring(ctx, "r")
	require.NoError(t, err)
	_, err = q.ResumeRecurring(ctx, "r")
	require.NoError(t, err)
	_, err = q.Stats(ctx)
	require.NoError(t, err)
	audit(t, q)
	_, err = q.Destroy(ctx)
	require.NoError(t, err)
	require.NoError(t, q.Close())

	topology := map[string]bool{"cluster": true, "command": true, "hello": true, "client": true, "ping": true, "info": true, "readonly": true}
	// MONITOR shows a command when it has run: the last of the queue's
	// has on its master, so the others' have on theirs.
	eventually(t, 10*time.Second, "the master monitored Destroy", func() bool {
		for _, l := range mons[master].snapshot() {
			if strings.Contains(l, `"srem" "{dq}:queues"`) || strings.Contains(l, `"del"`) {
				return true
			}
		}
		return false
	})
	sawTime := false
	for s, mon := range mons {
		for _, l := range mon.snapshot() {
			cmd := monitorCommand(l)
			if s == master {
				sawTime = sawTime || cmd == "time"
				continue
			}
			if topology[cmd] || strings.Contains(l, `"{dq}:queues"`) {
				continue
			}
			t.Errorf("%s, which holds none of the queue's slot, ran %s", s.Addr, l)
		}
	}
	require.True(t, sawTime, "TIME was read on the queue's master")
}
