package redisq

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dq-go/delayqueue/redisq/redistest"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv("REDISQ_HELPER"); mode != "" {
		os.Exit(runHelper(mode))
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: github.com/dq-go/delayqueue/redisq tests need redis-server on PATH: apt-get install -y redis-server")
		os.Exit(1)
	}
	goleak.VerifyTestMain(m)
}

// runHelper is the subprocess side of tests that kill a consumer: it claims
// one item, prints it and then hangs until it is killed.
func runHelper(mode string) int {
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: os.Getenv("REDISQ_ADDR")})
	vis, _ := time.ParseDuration(os.Getenv("REDISQ_VIS"))
	q, err := New(ctx, c, os.Getenv("REDISQ_QUEUE"), WithVisibilityTimeout(vis))
	if err != nil {
		fmt.Println("ERR", err)
		return 2
	}
	switch mode {
	case "claim":
		m, err := q.Take(ctx)
		if err != nil {
			fmt.Println("ERR", err)
			return 2
		}
		fmt.Printf("CLAIMED %s %s %d\n", m.ID, m.token, m.Attempts)
		select {} // wait for SIGKILL
	case "unique":
		// Enqueues REDISQ_N items, the i-th under unique key k<i>, with
		// ids of its own, and prints each one it stored; then DONE.
		// They start together, at REDISQ_START (Unix ns), to race.
		n, _ := strconv.Atoi(os.Getenv("REDISQ_N"))
		start, _ := strconv.ParseInt(os.Getenv("REDISQ_START"), 10, 64)
		time.Sleep(time.Until(time.Unix(0, start)))
		for i := range n {
			_, err := q.Add(ctx, EnqueueItem{ID: fmt.Sprintf("%s-%d", os.Getenv("REDISQ_ME"), i), At: time.Unix(1, 0),
				Job: Job{UniqueKey: fmt.Sprintf("k%d", i), UniqueFor: time.Hour}})
			switch {
			case err == nil:
				fmt.Printf("STORED %d\n", i)
			case !errors.Is(err, ErrUniqueHeld):
				fmt.Println("ERR", err)
				return 2
			}
		}
		fmt.Println("DONE")
		return 0
	case "rate":
		// Claims for ever, printing "CLAIM id ClaimedAt-in-ms key" for each
		// item: by AckTake when REDISQ_ME is odd, else by TakeBatch(3)
		// and AckMany, so that both claim scripts meet the limits.
		if me, _ := strconv.Atoi(os.Getenv("REDISQ_ME")); me%2 == 1 {
			var m *Message
			for {
				if m, err = q.AckTake(ctx, m); err != nil {
					fmt.Println("ERR", err)
					return 2
				}
				fmt.Printf("CLAIM %s %d %s\n", m.ID, m.ClaimedAt.UnixMilli(), m.LimitKey)
			}
		}
		for {
			ms, err := q.TakeBatch(ctx, 3)
			if err != nil {
				fmt.Println("ERR", err)
				return 2
			}
			for _, m := range ms {
				fmt.Printf("CLAIM %s %d %s\n", m.ID, m.ClaimedAt.UnixMilli(), m.LimitKey)
			}
			if err := errors.Join(q.AckMany(ctx, ms)...); err != nil {
				fmt.Println("ERR", err)
				return 2
			}
		}
	case "conc":
		// Claims for ever, by AckTake when REDISQ_ME is odd, else by
		// TakeBatch(2) and AckMany. Each item it holds goes into the zset
		// held (member id, score its lease deadline) from just after its
		// claim to just before its ack; it prints "CLAIM id key held" with
		// the number of the key's items in held whose leases had not
		// expired then (by Redis TIME), and holds the item REDISQ_HOLD.
		hold, _ := time.ParseDuration(os.Getenv("REDISQ_HOLD"))
		count := redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[1], ARGV[1], ARGV[2])
return redis.call('ZCOUNT', KEYS[1], '(' .. now, '+inf')`)
		held := func(ms []*Message) error {
			for _, m := range ms {
				n, err := count.Run(ctx, c, []string{"held:" + m.LimitKey}, m.Deadline.UnixMilli(), m.ID).Int()
				if err != nil {
					return err
				}
				fmt.Printf("CLAIM %s %s %d\n", m.ID, m.LimitKey, n)
			}
			time.Sleep(hold)
			for _, m := range ms {
				if err := c.ZRem(ctx, "held:"+m.LimitKey, m.ID).Err(); err != nil {
					return err
				}
			}
			return nil
		}
		if me, _ := strconv.Atoi(os.Getenv("REDISQ_ME")); me%2 == 1 {
			var m *Message
			for {
				if m, err = q.AckTake(ctx, m); err == nil {
					err = held([]*Message{m})
				}
				if err != nil {
					fmt.Println("ERR", err)
					return 2
				}
			}
		}
		for {
			ms, err := q.TakeBatch(ctx, 2)
			if err == nil {
				err = held(ms)
			}
			if err == nil {
				err = errors.Join(q.AckMany(ctx, ms)...)
			}
			if err != nil {
				fmt.Println("ERR", err)
				return 2
			}
		}
	case "recworker":
		// Runs a Worker (and so a keeper) on the queue, printing "RAN id
		// occurrence-ms due-ms" as each occurrence starts. A run due more
		// than a second after its occurrence is a backfilled one: it runs
		// for REDISQ_HOLD; a regular one returns at once.
		hold, _ := time.ParseDuration(os.Getenv("REDISQ_HOLD"))
		w := NewWorker(q, func(ctx context.Context, m *Message) error {
			_, at, _ := Occurrence(m.ID)
			fmt.Printf("RAN %s %d %d\n", m.ID, at.UnixMilli(), m.Due.UnixMilli())
			if m.Due.Sub(at) > time.Second {
				time.Sleep(hold)
			}
			return nil
		}, WorkerOptions{Concurrency: 4, Heartbeat: -1})
		fmt.Println("ERR", w.Run(ctx))
		return 2
	}
	return 3
}

// server is a redis-server child process owned by one test.
type server struct {
	t    testing.TB
	dir  string
	port int
	args []string
	mu   sync.Mutex
	cmd  *exec.Cmd
}

func freePort(t testing.TB) int {
	p, err := redistest.FreePort() // the cluster bus port free too
	require.NoError(t, err)
	return p
}

// startRedis starts redis-server on a free loopback port in a temp dir with
// AOF on and appendfsync always; extra args are appended (later wins).
func startRedis(t testing.TB, extra ...string) *server {
	t.Helper()
	s := &server{t: t, dir: t.TempDir(), port: freePort(t)}
	s.args = append([]string{
		"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
		"--dir", s.dir, "--appendonly", "yes", "--appendfsync", "always",
		"--save", "", "--daemonize", "no", "--logfile", filepath.Join(s.dir, "redis.log"),
	}, extra...)
	s.start()
	t.Cleanup(s.kill)
	return s
}

func (s *server) addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

func (s *server) start() {
	s.t.Helper()
	s.mu.Lock()
	s.cmd = exec.Command("redis-server", s.args...)
	require.NoError(s.t, s.cmd.Start())
	s.mu.Unlock()
	c := redis.NewClient(&redis.Options{Addr: s.addr(), MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(15 * time.Second)
	for {
		err := c.Ping(context.Background()).Err()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
			s.t.Fatalf("redis-server did not start: %v\n%s", err, log)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// kill sends SIGKILL (no shutdown save, no fsync beyond what already happened).
func (s *server) kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGCONT) // in case it was stopped
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.cmd = nil
}

func (s *server) signal(sig syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	require.NoError(s.t, s.cmd.Process.Signal(sig))
}

// client returns a client closed at test cleanup.
func (s *server) client(t testing.TB, tweak ...func(*redis.Options)) *redis.Client {
	o := &redis.Options{Addr: s.addr()}
	for _, f := range tweak {
		f(o)
	}
	c := redis.NewClient(o)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// newQueue returns a queue closed at test cleanup (before its client).
func newQueue(t testing.TB, c redis.UniversalClient, name string, opts ...Option) *Queue {
	t.Helper()
	q, err := New(context.Background(), c, name, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = q.Close() })
	return q
}

// audit fails the test unless every item is in exactly one place.
func audit(t testing.TB, q *Queue) *AuditReport {
	t.Helper()
	r, err := q.Audit(context.Background())
	require.NoError(t, err)
	require.True(t, r.OK(), "audit problems: %v (+%d more)", r.Problems, r.More)
	return r
}

// redisNow reads Redis TIME.
func redisNow(t testing.TB, c redis.UniversalClient) time.Time {
	t.Helper()
	tm, err := c.Time(context.Background()).Result()
	require.NoError(t, err)
	return tm
}

// untilRedisTime waits until the Redis clock reaches at.
func untilRedisTime(t testing.TB, c redis.UniversalClient, at time.Time) {
	t.Helper()
	eventually(t, 10*time.Second, "Redis TIME reaches "+at.UTC().Format(time.StampMicro), func() bool { return !redisNow(t, c).Before(at) })
}

// eventually polls cond every 5ms until it holds or the deadline passes.
func eventually(t testing.TB, d time.Duration, msg string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %v: %s", d, msg)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// helperProcess starts this test binary in helper mode and returns its
// command and a reader of its stdout lines.
func helperProcess(t testing.TB, mode string, env ...string) (*exec.Cmd, *bufio.Scanner) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), "REDISQ_HELPER="+mode), env...)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd, bufio.NewScanner(out)
}

func fields(line string) []string { return strings.Fields(line) }
