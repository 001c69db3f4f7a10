package redisq

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// cmdCounter counts the commands a client sends by name, pipelined ones
// included, but not those that set up a new connection (HELLO, CLIENT).
type cmdCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (h *cmdCounter) add(cmds ...redis.Cmder) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.n == nil {
		h.n = map[string]int{}
	}
	for _, c := range cmds {
		if n := strings.ToLower(c.Name()); n != "hello" && n != "client" {
			h.n[n]++
		}
	}
}

// take returns the counts since the last take, and their total.
func (h *cmdCounter) take() (map[string]int, int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	m, total := h.n, 0
	for _, v := range m {
		total += v
	}
	h.n = nil
	return m, total
}

func (h *cmdCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *cmdCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.add(cmd)
		return next(ctx, cmd)
	}
}
func (h *cmdCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.add(cmds...)
		return next(ctx, cmds)
	}
}

func registryMembers(t *testing.T, c redis.UniversalClient) []string {
	t.Helper()
	ms, err := c.SMembers(context.Background(), RegistryKey).Result()
	require.NoError(t, err)
	slices.Sort(ms)
	return ms
}

// aclClient creates the ACL user with rules and returns a client of it.
func aclClient(t *testing.T, s *server, admin *redis.Client, user string, rules ...interface{}) *redis.Client {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, admin.Do(ctx, append([]interface{}{"ACL", "SETUSER", user, "reset", "on", ">pw"}, rules...)...).Err())
	c := s.client(t, func(o *redis.Options) { o.Username, o.Password = user, "pw" })
	who, err := c.Do(ctx, "ACL", "WHOAMI").Text()
	require.NoError(t, err)
	require.Equal(t, user, who)
	return c
}

// New registers its queue; ListQueues lists the registered queues that
// have data; Destroy unregisters, also a name New registered for a queue
// never used. The registry key is no queue's key.
func TestRegistry(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	ctx := context.Background()
	for _, n := range []string{"a", "b", "idle", "*"} {
		q := newQueue(t, c, n)
		if n != "idle" {
			_, err := q.EnqueueAfter(ctx, "x", nil, time.Hour)
			require.NoError(t, err)
		}
	}
	require.Equal(t, []string{"*", "a", "b", "idle"}, registryMembers(t, c))
	// A tool opening a name a user typed leaves the registry alone.
	typo := newQueue(t, c, "typo", WithoutRegistry())
	ok, err := typo.Exists(ctx)
	require.NoError(t, err)
	require.False(t, ok)
	require.Equal(t, []string{"*", "a", "b", "idle"}, registryMembers(t, c))
	// Members redisq would never write are not queues.
	require.NoError(t, c.SAdd(ctx, RegistryKey, "", "x{y}", "{").Err())
	got, err := ListQueues(ctx, c)
	require.NoError(t, err)
	require.Equal(t, []string{"*", "a", "b"}, got, "idle has no data, the others are not names")
	require.Empty(t, queueNames([]string{RegistryKey}), "the registry key is no queue's")
	scanned, err := ScanQueues(ctx, c)
	require.NoError(t, err)
	require.Equal(t, got, scanned)

	_, err = newQueue(t, c, "a").Destroy(ctx)
	require.NoError(t, err)
	_, err = newQueue(t, c, "idle").Destroy(ctx)
	require.ErrorIs(t, err, ErrNoQueue)
	require.Equal(t, []string{"", "*", "b", "x{y}", "{"}, registryMembers(t, c))
	got, err = ListQueues(ctx, c)
	require.NoError(t, err)
	require.Equal(t, []string{"*", "b"}, got)
}

// Regression (issue 24): a Queue value used again after Destroy was not in
// the registry, so ListQueues (dqctl, the dashboard, the exporter) no
// longer showed a queue that held items. The call that starts a queue's
// sequence (its first write, of a new queue or after Destroy) now reports
// it and registers the name: whichever Queue value writes first, in any
// process, and nothing more for the other calls.
func TestDestroyedQueueWrittenAgainIsListed(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	ctx := context.Background()
	q := newQueue(t, c, "again")
	other := newQueue(t, s.client(t), "again") // another process, open throughout
	listed := func() bool {
		t.Helper()
		names, err := ListQueues(ctx, c)
		require.NoError(t, err)
		return slices.Contains(names, "again")
	}
	destroy := func() {
		t.Helper()
		_, err := q.Destroy(ctx)
		require.NoError(t, err)
		require.False(t, listed())
	}
	_, err := q.EnqueueAfter(ctx, "x", nil, time.Hour)
	require.NoError(t, err)
	require.True(t, listed())
	writes := []struct {
		name  string
		write func() error
	}{
		{"Enqueue by the destroying value", func() error { _, err := q.EnqueueAfter(ctx, "x", nil, time.Hour); return err }},
		{"Enqueue by another value", func() error { _, err := other.EnqueueAfter(ctx, "x", nil, time.Hour); return err }},
		{"EnqueueMany", func() error {
			_, err := other.EnqueueMany(ctx, []EnqueueItem{{ID: "x", After: time.Hour}, {ID: "y"}})
			return err
		}},
		{"Schedule", func() error { _, err := other.Schedule(ctx, "x", nil, time.Now().Add(time.Hour)); return err }},
		{"Register", func() error { _, err := other.Register(ctx, "r", Every(time.Hour), nil); return err }},
	}
	for _, w := range writes {
		destroy()
		require.NoError(t, w.write(), w.name)
		require.True(t, listed(), "%s after Destroy: not listed", w.name)
	}

	// No command more per write once the queue lives.
	require.NoError(t, c.ConfigResetStat(ctx).Err())
	for i := range 20 {
		_, err := other.EnqueueAfter(ctx, fmt.Sprint("more", i), nil, time.Hour)
		require.NoError(t, err)
	}
	require.Zero(t, cmdCalls(t, c, "sadd"), "SADDs for writes of a living queue")

	// WithoutRegistry is honoured.
	quiet := newQueue(t, c, "quiet", WithoutRegistry())
	for range 2 {
		_, err := quiet.EnqueueAfter(ctx, "x", nil, time.Hour)
		require.NoError(t, err)
		require.NotContains(t, registryMembers(t, c), "quiet")
		_, err = quiet.Destroy(ctx)
		require.NoError(t, err)
	}

	// A Partitioned value used after its Destroy stores its table and
	// registers its name again.
	p := newPartitioned(t, c, "pagain", 2)
	_, err = p.EnqueueAfter(ctx, "x", nil, time.Hour)
	require.NoError(t, err)
	_, err = p.Destroy(ctx)
	require.NoError(t, err)
	_, err = p.EnqueueAfter(ctx, "x", nil, time.Hour)
	require.NoError(t, err)
	infos, err := ListPartitioned(ctx, c)
	require.NoError(t, err)
	require.Equal(t, []PartitionedInfo{{Name: "pagain", Partitions: PartitionLayout("pagain", 2)}}, infos)
	names, err := ListQueues(ctx, c)
	require.NoError(t, err)
	require.Contains(t, names, p.Partition(p.PartitionOf("x")).Name())
	p2, err := OpenPartitioned(ctx, c, "pagain")
	require.NoError(t, err)
	st, err := p2.Stats(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 1, st.Scheduled)
	require.NoError(t, p2.Close())
}

// Item 6 of issue 17: listing the queues SCANned the whole keyspace.
// ListQueues' commands depend on the queues only: 200,000 unrelated keys
// change nothing.
func TestListQueuesCostIndependentOfKeyspace(t *testing.T) {
	s := startRedis(t, "--enable-debug-command", "yes")
	c := s.client(t)
	ctx := context.Background()
	var names []string
	for i := range 10 {
		n := string(rune('a' + i))
		_, err := newQueue(t, c, n).EnqueueAfter(ctx, "x", nil, time.Hour)
		require.NoError(t, err)
		names = append(names, n)
	}
	h := &cmdCounter{}
	counted := s.client(t)
	counted.AddHook(h)
	got, err := ListQueues(ctx, counted)
	require.NoError(t, err)
	require.Equal(t, names, got)
	small, _ := h.take()
	require.Equal(t, map[string]int{"sscan": 1, "exists": 10}, small)

	require.NoError(t, c.Do(ctx, "DEBUG", "POPULATE", 200000, "unrelated").Err())
	got, err = ListQueues(ctx, counted)
	require.NoError(t, err)
	require.Equal(t, names, got)
	big, _ := h.take()
	require.Equal(t, small, big, "ListQueues' commands grew with the keyspace")
}

// Queues no process of this version opened (an older version's, or keys
// written by hand) are not registered: ScanQueues finds them and changes
// nothing; a QueueScanner finds them a bounded number of keys at a time,
// and registers them.
func TestScanningForUnregisteredQueues(t *testing.T) {
	s := startRedis(t, "--enable-debug-command", "yes")
	c := s.client(t)
	ctx := context.Background()
	require.NoError(t, c.Do(ctx, "DEBUG", "POPULATE", 20000, "unrelated").Err())
	hand := []string{"old", "old:eu", "bad\xff", "*"}
	for _, n := range hand {
		require.NoError(t, c.Set(ctx, seqKey(n), 1, 0).Err())
	}
	// Keys that match {dq:*}:seq but are no queue's sequence.
	for _, k := range []string{"{dq:x}:m:}:seq", "{dq:br{ace}:seq", "{dq:}:seq"} {
		require.NoError(t, c.Set(ctx, k, 1, 0).Err())
	}
	_, err := newQueue(t, c, "new").EnqueueAfter(ctx, "x", nil, time.Hour)
	require.NoError(t, err)
	want := append(slices.Clone(hand), "new")
	slices.Sort(want)

	listed, err := ListQueues(ctx, c)
	require.NoError(t, err)
	require.Equal(t, []string{"new"}, listed)
	all, err := ScanQueues(ctx, c)
	require.NoError(t, err)
	require.Equal(t, want, all)
	require.Equal(t, []string{"new"}, registryMembers(t, c), "ScanQueues changed the registry")

	h := &cmdCounter{}
	counted := s.client(t)
	counted.AddHook(h)
	sc := NewQueueScanner(counted)
	// The unregistered queues' keys are spread over the keyspace: only
	// calls that go on from where the last one stopped find them all.
	found := map[string]bool{}
	for calls := 1; len(found) < len(want); calls++ {
		require.LessOrEqual(t, calls, 200, "found only %v", found)
		names, err := sc.Next(ctx, 1000)
		require.NoError(t, err)
		for _, n := range names {
			found[n] = true
		}
		n, _ := h.take()
		require.LessOrEqual(t, n["scan"], 1, "one call of 1000 keys sent %v", n)
	}
	require.Equal(t, want, registryMembers(t, c), "the scanner registers what it finds")
	listed, err = ListQueues(ctx, c)
	require.NoError(t, err)
	require.Equal(t, want, listed)
}

// A QueueScanner whose user may not write the registry keeps what it found
// and returns it from every later call while it exists.
func TestQueueScannerReadOnly(t *testing.T) {
	s := startRedis(t)
	admin := s.client(t)
	ctx := context.Background()
	require.NoError(t, admin.Set(ctx, seqKey("old"), 1, 0).Err())
	ro := aclClient(t, s, admin, "ro", "~*", "+@all", "-@write")

	// New is best effort about the registry: a read-only user opens queues.
	q, err := New(ctx, ro, "other")
	require.NoError(t, err)
	_ = q.Close()
	require.Empty(t, registryMembers(t, admin))

	sc := NewQueueScanner(ro)
	names, err := sc.Next(ctx, 1000)
	require.NoError(t, err)
	require.Equal(t, []string{"old"}, names)
	require.Empty(t, registryMembers(t, admin))
	names, err = sc.Next(ctx, 0)
	require.NoError(t, err)
	require.Equal(t, []string{"old"}, names, "kept")
	require.NoError(t, admin.Del(ctx, seqKey("old")).Err())
	names, err = sc.Next(ctx, 0)
	require.NoError(t, err)
	require.Empty(t, names, "forgotten once gone")
}

// ListQueues lists a registered queue whose keys its user may not read
// (EXISTS refused): whether it exists is unknown, and using it says why.
func TestListQueuesKeysRefused(t *testing.T) {
	s := startRedis(t)
	admin := s.client(t)
	ctx := context.Background()
	for _, n := range []string{"mine", "theirs"} {
		_, err := newQueue(t, admin, n).EnqueueAfter(ctx, "x", nil, time.Hour)
		require.NoError(t, err)
	}
	part := aclClient(t, s, admin, "part", "~{dq:mine}:*", "~"+RegistryKey, "+@all")
	got, err := ListQueues(ctx, part)
	require.NoError(t, err)
	require.Equal(t, []string{"mine", "theirs"}, got)
}
