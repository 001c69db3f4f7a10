package redisq

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dq-go/delayqueue/redisq/redistest"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// scheduledOf returns the scheduled items of registration name (all of
// them if name is ""), in due order, with payloads.
func scheduledOf(t testing.TB, q *Queue, name string) []Item {
	t.Helper()
	var out []Item
	opt := ListOptions{Limit: MaxPage, Payloads: true}
	for {
		page, err := q.List(context.Background(), StateScheduled, opt)
		require.NoError(t, err)
		for _, it := range page.Items {
			if n, _, ok := Occurrence(it.ID); ok && (name == "" || n == name) {
				out = append(out, it)
			}
		}
		if page.Next < 0 {
			return out
		}
		opt.Offset = page.Next
	}
}

// keep runs KeepRecurring on q until the returned function is called,
// which waits for it to return and checks that it returned nil.
func keep(t testing.TB, q *Queue) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- q.KeepRecurring(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				require.NoError(t, err)
			case <-time.After(20 * time.Second):
				t.Fatal("KeepRecurring did not return within 20s of its ctx's end")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// taken is one message a test consumer took.
type taken struct {
	id       string
	at       time.Time // the occurrence, from the id
	due      time.Time
	claimed  time.Time
	attempts int
}

// consume takes and acks messages of q until it has n of registration
// name or the deadline passes, and returns them.
func consume(t testing.TB, q *Queue, name string, n int, d time.Duration) []taken {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var out []taken
	for len(out) < n {
		m, err := q.Take(ctx)
		if err != nil {
			t.Fatalf("took %d of %d occurrences of %q within %v: %v (%v)", len(out), n, name, d, err, out)
		}
		require.NoError(t, m.Ack(context.Background()))
		reg, at, ok := Occurrence(m.ID)
		require.True(t, ok, m.ID)
		if reg == name {
			out = append(out, taken{m.ID, at, m.Due, m.ClaimedAt, m.Attempts})
		}
	}
	return out
}

// requireConsecutive checks that ts are successive occurrences of s, each
// delivered once, at its due time (the occurrence), never early.
func requireConsecutive(t testing.TB, s Schedule, ts []taken) {
	t.Helper()
	for i, x := range ts {
		require.True(t, x.due.Equal(x.at), "%s due at %v", x.id, x.due)
		require.False(t, x.claimed.Before(x.due), "%s claimed at %v, before its due time", x.id, x.claimed)
		require.Equal(t, 1, x.attempts, x.id)
		if i > 0 {
			require.True(t, s.Next(ts[i-1].at).Equal(x.at), "after %v came %v, want %v", ts[i-1].at, x.at, s.Next(ts[i-1].at))
		}
	}
}

func TestRegisterEnqueuesFirstOccurrence(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "rec")
	ctx := context.Background()
	before := redisNow(t, c)
	out, err := q.Register(ctx, "hourly", Every(time.Hour), []byte("p1"))
	require.NoError(t, err)
	require.Equal(t, RegistrationCreated, out)
	after := redisNow(t, c)

	items := scheduledOf(t, q, "")
	require.Len(t, items, 1)
	it := items[0]
	require.True(t, it.Due.After(before) && !it.Due.After(after.Add(time.Hour)), "due %v", it.Due)
	require.Equal(t, time.Duration(0), it.Due.Sub(time.Unix(0, 0))%time.Hour, "on the hour")
	require.Equal(t, OccurrenceID("hourly", it.Due), it.ID)
	require.Equal(t, "p1", string(it.Payload))

	regs, err := q.Registrations(ctx)
	require.NoError(t, err)
	require.Len(t, regs, 1)
	r := regs[0]
	require.Equal(t, "hourly", r.Name)
	require.Equal(t, "every 1h0m0s", r.Spec)
	require.Equal(t, Every(time.Hour), r.Schedule)
	require.NoError(t, r.SpecErr)
	require.True(t, r.Next.Equal(it.Due) && r.Enqueued.Equal(it.Due))
	require.Equal(t, it.ID, r.EnqueuedID)
	require.True(t, r.Last.IsZero())
	require.False(t, r.Ended)
	require.EqualValues(t, 2, r.PayloadSize)
	require.Nil(t, r.Payload)
	require.False(t, r.Created.Before(before.Truncate(time.Millisecond)) || r.Created.After(after))
	require.Equal(t, r.Created, r.Updated)

	one, err := q.Registration(ctx, "hourly")
	require.NoError(t, err)
	require.Equal(t, "p1", string(one.Payload))
	_, err = q.Registration(ctx, "nope")
	require.ErrorIs(t, err, ErrNotFound)

	st, err := q.Stats(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 1, st.Enqueued, "an occurrence counts as an enqueued item")
	audit(t, q)
}

func TestRegisterAgain(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "rec")
	ctx := context.Background()
	reg := func(sched Schedule, p string, opts ...RegisterOption) RegisterOutcome {
		t.Helper()
		out, err := q.Register(ctx, "job", sched, []byte(p), opts...)
		require.NoError(t, err)
		return out
	}
	only := func() Item {
		t.Helper()
		items := scheduledOf(t, q, "job")
		require.Len(t, items, 1, "one occurrence pending, never two")
		return items[0]
	}
	require.Equal(t, RegistrationCreated, reg(Every(time.Hour), "a"))
	first := only()

	// The same definition, from any process, changes nothing.
	require.Equal(t, RegistrationUnchanged, reg(Every(time.Hour), "a"))
	require.Equal(t, RegistrationUnchanged, reg(EveryPhase(time.Hour, 2*time.Hour), "a"), "the same canonical text")
	require.Equal(t, first, only())

	// Another payload: the pending occurrence is replaced, same time.
	require.Equal(t, RegistrationUpdated, reg(Every(time.Hour), "b"))
	it := only()
	require.Equal(t, first.ID, it.ID)
	require.Equal(t, "b", string(it.Payload))

	// Another schedule: the pending occurrence is cancelled, the new one's
	// first is enqueued.
	require.Equal(t, RegistrationUpdated, reg(EveryPhase(time.Hour, 30*time.Minute), "b"))
	it = only()
	require.Equal(t, 30*time.Minute, it.Due.Sub(time.Unix(0, 0))%time.Hour)
	r, err := q.Registration(ctx, "job")
	require.NoError(t, err)
	require.Equal(t, "every 1h0m0s, phase 30m0s", r.Spec)
	require.True(t, r.Enqueued.Equal(it.Due))

	// Another catch-up bound is a change too.
	require.Equal(t, RegistrationUpdated, reg(EveryPhase(time.Hour, 30*time.Minute), "b", CatchUp(3)))
	require.Equal(t, it.ID, only().ID)

	// Versions: a higher one with the same definition is recorded; a lower
	// one changes nothing; a higher one wins.
	require.Equal(t, RegistrationUnchanged, reg(EveryPhase(time.Hour, 30*time.Minute), "b", CatchUp(3), RegistrationVersion(5)))
	require.Equal(t, RegistrationStale, reg(Every(time.Minute), "old", RegistrationVersion(4)))
	require.Equal(t, it.ID, only().ID)
	r, err = q.Registration(ctx, "job")
	require.NoError(t, err)
	require.EqualValues(t, 5, r.Version)
	require.Equal(t, "b", string(r.Payload))
	require.Equal(t, RegistrationStale, reg(EveryPhase(time.Hour, 30*time.Minute), "b", CatchUp(3)), "version 0 < 5")
	require.Equal(t, RegistrationUpdated, reg(Every(time.Minute), "new", RegistrationVersion(6)))
	it = only()
	require.Equal(t, "new", string(it.Payload))
	require.Equal(t, time.Duration(0), it.Due.Sub(time.Unix(0, 0))%time.Minute)

	st, err := q.Stats(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 4, st.Cancelled, "four pending occurrences replaced")
	audit(t, q)
}

func TestRegisterRejectsBadInput(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "rec")
	ctx := context.Background()
	feb30, err := Cron("0 0 30 2 *")
	require.NoError(t, err)
	for _, x := range []struct {
		name string
		s    Schedule
		opts []RegisterOption
		want string
	}{
		{"", Every(time.Second), nil, "empty registration name"},
		{strings.Repeat("n", MaxRegistrationName+1), Every(time.Second), nil, "over MaxRegistrationName"},
		{"f", ScheduleFunc(func(t time.Time) time.Time { return t.Add(time.Second) }), nil, "cannot be stored in Redis"},
		{"ms", Interval{Period: 1500 * time.Microsecond}, nil, "not a whole number of milliseconds"},
		{"cu", Every(time.Second), []RegisterOption{CatchUp(MaxCatchUp + 1)}, "over MaxCatchUp"},
		{"feb30", feb30, nil, ErrNoOccurrence.Error()},
	} {
		_, err := q.Register(ctx, x.name, x.s, nil, x.opts...)
		require.Error(t, err, x.name)
		require.Contains(t, err.Error(), x.want)
	}
	require.Panics(t, func() { _, _ = q.Register(ctx, "nil", nil, nil) })
	require.Panics(t, func() { CatchUp(-1) })
	require.Panics(t, func() { RegistrationVersion(-1) })
	require.Panics(t, func() { RegistrationVersion(1 << 53) })
	regs, err := q.Registrations(ctx)
	require.NoError(t, err)
	require.Empty(t, regs, "nothing stored")
	require.Empty(t, scheduledOf(t, q, ""))

	_, err = q.Unregister(ctx, "nope")
	require.ErrorIs(t, err, ErrNotFound)
	require.NoError(t, q.Close())
	_, err = q.Register(ctx, "x", Every(time.Second), nil)
	require.ErrorIs(t, err, ErrClosed)
	_, err = q.Unregister(ctx, "x")
	require.ErrorIs(t, err, ErrClosed)
	_, err = q.Registrations(ctx)
	require.ErrorIs(t, err, ErrClosed)
	require.ErrorIs(t, q.KeepRecurring(ctx), ErrClosed)
}

// Registers racing with different definitions: of equal versions the last
// one Redis runs wins (its outcome is the update), of different versions
// the highest; either way exactly one occurrence is pending, that of the
// winner.
func TestRegisterRaceDocumentedWinner(t *testing.T) {
	s := startRedis(t)
	ctx := context.Background()
	qa := newQueue(t, s.client(t), "race")
	qb := newQueue(t, s.client(t), "race")
	specA, specB := EveryPhase(time.Hour, 10*time.Minute), EveryPhase(time.Hour, 20*time.Minute)
	for round := 0; round < 40; round++ {
		name := fmt.Sprint("job", round)
		versioned := round%2 == 1
		var va, vb []RegisterOption
		if versioned {
			va, vb = []RegisterOption{RegistrationVersion(1)}, []RegisterOption{RegistrationVersion(2)}
		}
		var outA, outB RegisterOutcome
		var errA, errB error
		var wg sync.WaitGroup
		start := make(chan struct{})
		wg.Add(2)
		go func() { defer wg.Done(); <-start; outA, errA = qa.Register(ctx, name, specA, []byte("a"), va...) }()
		go func() { defer wg.Done(); <-start; outB, errB = qb.Register(ctx, name, specB, []byte("b"), vb...) }()
		close(start)
		wg.Wait()
		require.NoError(t, errA)
		require.NoError(t, errB)
		r, err := qa.Registration(ctx, name)
		require.NoError(t, err)
		winner := "b"
		switch {
		case versioned:
			require.Contains(t, [][2]RegisterOutcome{{RegistrationCreated, RegistrationUpdated}, {RegistrationStale, RegistrationCreated}},
				[2]RegisterOutcome{outA, outB})
		case outA == RegistrationUpdated:
			require.Equal(t, RegistrationCreated, outB)
			winner = "a"
		default:
			require.Equal(t, [2]RegisterOutcome{RegistrationCreated, RegistrationUpdated}, [2]RegisterOutcome{outA, outB})
		}
		want := map[string]Schedule{"a": specA, "b": specB}[winner]
		text, _ := ScheduleText(want)
		require.Equal(t, text, r.Spec, "round %d", round)
		require.Equal(t, winner, string(r.Payload))
		items := scheduledOf(t, qa, name)
		require.Len(t, items, 1, "round %d: one occurrence pending", round)
		require.Equal(t, winner, string(items[0].Payload))
		require.Equal(t, want.(Interval).Phase, items[0].Due.Sub(time.Unix(0, 0))%time.Hour)
	}
	audit(t, qa)
}

func TestUnregister(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "rec")
	ctx := context.Background()
	_, err := q.Register(ctx, "a", Every(time.Hour), nil)
	require.NoError(t, err)
	_, err = q.Register(ctx, "b", Every(time.Hour), nil)
	require.NoError(t, err)
	cancelled, err := q.Unregister(ctx, "a")
	require.NoError(t, err)
	require.True(t, cancelled)
	require.Empty(t, scheduledOf(t, q, "a"))
	require.Len(t, scheduledOf(t, q, "b"), 1)
	_, err = q.Unregister(ctx, "a")
	require.ErrorIs(t, err, ErrNotFound)
	regs, err := q.Registrations(ctx)
	require.NoError(t, err)
	require.Len(t, regs, 1)
	require.Equal(t, "b", regs[0].Name)

	// An occurrence already taken is not cancelled.
	_, err = q.Register(ctx, "c", Every(time.Hour), nil, FirstAt(time.Now().Add(-time.Minute)))
	require.NoError(t, err)
	m, err := q.Take(ctx)
	require.NoError(t, err)
	name, _, _ := Occurrence(m.ID)
	require.Equal(t, "c", name)
	cancelled, err = q.Unregister(ctx, "c")
	require.NoError(t, err)
	require.False(t, cancelled)
	require.NoError(t, m.Ack(ctx))

	// A rerun of the same request (go-redis after a lost reply) reports
	// the first run's result.
	_, err = q.Register(ctx, "d", Every(time.Hour), nil)
	require.NoError(t, err)
	unreg := func(rid string) []interface{} {
		t.Helper()
		r, err := q.run(ctx, scriptUnregister, []string{q.recKey("d"), q.recsKey(), q.recxKey(), q.ridKey(rid)}, "d", rid)
		require.NoError(t, err)
		return r
	}
	require.Equal(t, []interface{}{int64(1), int64(1)}, unreg("rid1"))
	require.Equal(t, []interface{}{int64(1), int64(1)}, unreg("rid1"), "a rerun")
	require.Equal(t, []interface{}{int64(0)}, unreg("rid2"))
	audit(t, q)
}

func TestRegisterRerunReportsFirstOutcome(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "rec")
	ctx := context.Background()
	now := redisNow(t, c)
	first := dueMS(Every(time.Hour).Next(now))
	id := occurrenceID("a", first)
	keys := []string{q.recKey("a"), q.recsKey(), q.recxKey(), q.itemKey(id), q.itemKey(id)}
	run := func(rid string) []interface{} {
		r, err := q.run(ctx, scriptRegister, keys, "a", "every 1h0m0s", "x", "0", "0", first, id, first, id, first, first, 0, rid) // dues, no job fields
		require.NoError(t, err)
		return r
	}
	require.EqualValues(t, 1, run("r1")[0])
	require.EqualValues(t, 1, run("r1")[0], "a rerun: created, as its first run")
	require.EqualValues(t, 3, run("r2")[0], "another call: unchanged")
	require.Len(t, scheduledOf(t, q, "a"), 1)
}

func TestKeepRecurringDeliversEachOccurrenceOnce(t *testing.T) {
	s := startRedis(t)
	ctx := context.Background()
	q := newQueue(t, s.client(t), "rec")
	// Three keepers in three Queue values, as in three processes.
	var stops []func()
	for range 3 {
		stops = append(stops, keep(t, newQueue(t, s.client(t), "rec")))
	}
	_, err := q.Register(ctx, "tick", Every(time.Second), []byte("t"))
	require.NoError(t, err)
	got := consume(t, q, "tick", 5, 30*time.Second)
	requireConsecutive(t, Every(time.Second), got)
	for _, stop := range stops {
		stop()
	}
	st, err := q.Stats(ctx)
	require.NoError(t, err)
	// The 5 taken, and those enqueued after them as the keepers stopped
	// (the keepers and the consumer act at the same instants).
	require.Contains(t, []int64{5, 6, 7}, st.Enqueued)
	pending := scheduledOf(t, q, "tick")
	require.Len(t, pending, int(st.Enqueued)-5)
	for i, it := range pending {
		require.True(t, it.Due.Equal(got[4].at.Add(time.Duration(i+1)*time.Second)))
	}
	audit(t, q)
}

// A keeper blocked on the change feed learns of a new registration at
// once: without the feed it would only read it a minute later
// (keeperRefresh), and the occurrences in between would be missed.
func TestKeepRecurringChangeFeed(t *testing.T) {
	s := startRedis(t)
	ctx := context.Background()
	c := s.client(t)
	k := newQueue(t, s.client(t), "rec")
	stop := keep(t, k)
	// Wait until the keeper blocks on the feed.
	eventually(t, 10*time.Second, "the keeper blocks in XREAD", func() bool {
		l, err := c.ClientList(ctx).Result()
		require.NoError(t, err)
		return strings.Contains(l, "cmd=xread")
	})
	q := newQueue(t, c, "rec")
	_, err := q.Register(ctx, "tick", Every(time.Second), nil)
	require.NoError(t, err)
	got := consume(t, q, "tick", 3, 15*time.Second)
	requireConsecutive(t, Every(time.Second), got)

	// Unregistering stops the series: the keeper enqueues nothing more.
	_, err = q.Unregister(ctx, "tick")
	require.NoError(t, err)
	time.Sleep(2500 * time.Millisecond)
	require.Empty(t, scheduledOf(t, q, "tick"))
	st, err := q.Stats(ctx)
	require.NoError(t, err)
	// Those taken, and at most two enqueued after them before Unregister
	// (the keeper and the consumer act at the same instants).
	require.Contains(t, []int64{3, 4, 5}, st.Enqueued)
	stop()
	audit(t, q)
}

// Occurrences that came while no keeper ran are coalesced by default: the
// one enqueued before stands for them, and the next is the first after
// now. CatchUp(n) enqueues n of them, oldest first, then the first after
// now, as the core does.
func TestKeepRecurringMissedOccurrences(t *testing.T) {
	s := startRedis(t)
	ctx := context.Background()
	c := s.client(t)
	q := newQueue(t, c, "rec")
	hour := Every(time.Hour)
	for _, cu := range []int{0, 3} {
		name := fmt.Sprint("cu", cu)
		now := redisNow(t, c)
		first := now.Truncate(time.Hour).Add(-10 * time.Hour)
		_, err := q.Register(ctx, name, hour, nil, FirstAt(first), CatchUp(cu))
		require.NoError(t, err)
		require.Len(t, scheduledOf(t, q, name), 1)
		stop := keep(t, q)
		eventually(t, 10*time.Second, "the keeper catches up", func() bool { return len(scheduledOf(t, q, name)) == cu+2 })
		stop()
		items := scheduledOf(t, q, name)
		require.Len(t, items, cu+2)
		for i := 0; i <= cu; i++ {
			require.Equal(t, OccurrenceID(name, first.Add(time.Duration(i)*time.Hour)), items[i].ID)
		}
		next := items[cu+1]
		// The first after now (the next hour; the one after if an hour
		// began meanwhile).
		require.True(t, next.Due.After(now) && !next.Due.After(hour.Next(now).Add(time.Hour)), "the first after now: %v", next.Due)
		require.Equal(t, OccurrenceID(name, next.Due), next.ID)
		require.Zero(t, next.Due.Sub(time.Unix(0, 0))%time.Hour)
		r, err := q.Registration(ctx, name)
		require.NoError(t, err)
		require.True(t, r.Enqueued.Equal(next.Due))
		require.True(t, r.Last.Equal(items[cu].Due), "the last one that has come")
		require.True(t, r.Next.Equal(next.Due))
	}
	audit(t, q)
}

// End to end across the DST transitions of 2026 in Europe/Paris, by
// catching up from a first occurrence before them.
func TestKeepRecurringDaylightSavingTime(t *testing.T) {
	s := startRedis(t)
	ctx := context.Background()
	q := newQueue(t, s.client(t), "rec")
	paris, err := time.LoadLocation("Europe/Paris")
	require.NoError(t, err)
	spec, err := Cron("CRON_TZ=Europe/Paris 30 2 * * *")
	require.NoError(t, err)
	_, err = q.Register(ctx, "autumn", spec, nil, FirstAt(time.Date(2026, 10, 24, 2, 30, 0, 0, paris)), CatchUp(3))
	require.NoError(t, err)
	_, err = q.Register(ctx, "spring", spec, nil, FirstAt(time.Date(2026, 3, 28, 2, 30, 0, 0, paris)), CatchUp(2))
	require.NoError(t, err)
	keep(t, q)
	eventually(t, 10*time.Second, "the keeper catches up", func() bool {
		return len(scheduledOf(t, q, "autumn")) == 5 && len(scheduledOf(t, q, "spring")) == 4
	})
	ids := func(name string) []string {
		var out []string
		for _, it := range scheduledOf(t, q, name) {
			require.Equal(t, OccurrenceID(name, it.Due), it.ID)
			out = append(out, it.ID)
		}
		return out
	}
	now := time.Now()
	tomorrow := spec.Next(now)
	require.Equal(t, []string{
		"rec:autumn@2026-10-24T00:30:00Z", // 02:30 CEST
		"rec:autumn@2026-10-25T00:30:00Z", // 02:30 CEST
		"rec:autumn@2026-10-25T01:30:00Z", // 02:30 CET, the repeated hour
		"rec:autumn@2026-10-26T01:30:00Z", // 02:30 CET
		OccurrenceID("autumn", tomorrow),  // the first after now
	}, ids("autumn"))
	require.Equal(t, []string{
		"rec:spring@2026-03-28T01:30:00Z", // 02:30 CET
		"rec:spring@2026-03-30T00:30:00Z", // 02:30 CEST: none on the 29th
		"rec:spring@2026-03-31T00:30:00Z",
		OccurrenceID("spring", tomorrow),
	}, ids("spring"))
}

func TestKeepRecurringStops(t *testing.T) {
	s := startRedis(t)
	q := newQueue(t, s.client(t), "rec")
	_, err := q.Register(context.Background(), "h", Every(time.Hour), nil)
	require.NoError(t, err)
	// By its ctx: nil.
	stop := keep(t, q)
	time.Sleep(100 * time.Millisecond)
	stop()
	// By Close: ErrClosed.
	done := make(chan error, 1)
	go func() { done <- q.KeepRecurring(context.Background()) }()
	time.Sleep(100 * time.Millisecond)
	require.NoError(t, q.Close())
	select {
	case err := <-done:
		require.ErrorIs(t, err, ErrClosed)
	case <-time.After(10 * time.Second):
		t.Fatal("KeepRecurring did not return after Close")
	}
}

// A registration whose schedule this process cannot compute (a later
// version's, say) is logged and left alone; the others are kept.
func TestKeepRecurringSkipsUnknownSchedule(t *testing.T) {
	s := startRedis(t)
	ctx := context.Background()
	c := s.client(t)
	var logs bytes.Buffer
	var mu sync.Mutex
	lw := writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return logs.Write(p) })
	q := newQueue(t, c, "rec", WithLogger(slog.New(slog.NewTextHandler(lw, nil))))
	require.NoError(t, c.HSet(ctx, q.recKey("future"), "s", "every other tuesday", "cu", "0", "v", "0", "g", "1",
		"at", "0", "id", "rec:future@1970-01-01T00:00:00Z", "ct", "0", "ut", "0", "p", "").Err())
	require.NoError(t, c.ZAdd(ctx, q.recsKey(), redis.Z{Member: "future"}).Err())
	_, err := q.Register(ctx, "tick", Every(time.Second), nil)
	require.NoError(t, err)
	keep(t, q)
	requireConsecutive(t, Every(time.Second), consume(t, q, "tick", 2, 15*time.Second))
	mu.Lock()
	require.Contains(t, logs.String(), "registration=future")
	mu.Unlock()
	regs, err := q.Registrations(ctx)
	require.NoError(t, err)
	require.Len(t, regs, 2)
	require.Equal(t, "future", regs[0].Name)
	require.Error(t, regs[0].SpecErr)
	require.Nil(t, regs[0].Schedule)
	require.True(t, regs[0].Next.IsZero())
	require.True(t, regs[0].Last.Equal(time.Unix(0, 0)))
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

func TestKeeperPlan(t *testing.T) {
	sec := Every(time.Second)
	k := &keeper{}
	r := &keptReg{sched: sec, at: 10_000}
	occ, _, skip, end, err := k.plan(r, 10_500)
	require.NoError(t, err)
	require.Equal(t, []int64{11_000}, occ, "the next one, not yet come")
	require.False(t, skip || end)
	occ, from, skip, _, err := k.plan(r, 15_500)
	require.NoError(t, err)
	require.Equal(t, []int64{16_000}, occ, "coalesced: the first after now")
	require.True(t, skip)
	require.EqualValues(t, 11_000, from)
	r.catchUp = 2
	occ, from, skip, _, err = k.plan(r, 15_500)
	require.NoError(t, err)
	require.Equal(t, []int64{11_000, 12_000, 16_000}, occ)
	require.True(t, skip)
	require.EqualValues(t, 13_000, from)
	r.catchUp = 10
	occ, _, skip, _, err = k.plan(r, 15_000)
	require.NoError(t, err)
	require.Equal(t, []int64{11_000, 12_000, 13_000, 14_000, 15_000, 16_000}, occ, "all caught up")
	require.False(t, skip)
	// A catch-up window of 2.5 s: the missed ones before 13 s are skipped.
	r.window = 2_500
	occ, from, skip, _, err = k.plan(r, 15_500)
	require.NoError(t, err)
	require.Equal(t, []int64{13_000, 14_000, 15_000, 16_000}, occ, "those within the window")
	require.True(t, skip)
	require.EqualValues(t, 11_000, from)
	r.catchUp = 1
	occ, from, skip, _, err = k.plan(r, 15_500)
	require.NoError(t, err)
	require.Equal(t, []int64{13_000, 16_000}, occ, "within the window, and the bound")
	require.True(t, skip)
	require.EqualValues(t, 11_000, from)
	occ, from, skip, _, err = k.plan(r, 12_000)
	require.NoError(t, err)
	require.Equal(t, []int64{11_000, 13_000}, occ, "none missed past the window; the bound")
	require.True(t, skip)
	require.EqualValues(t, 12_000, from)
	r.window, r.catchUp = 0, 10
	// A series that ends.
	r.sched = ScheduleFunc(func(t time.Time) time.Time {
		if t.UnixMilli() >= 12_000 {
			return time.Time{}
		}
		return t.Add(time.Second)
	})
	occ, _, _, end, err = k.plan(r, 15_000)
	require.NoError(t, err)
	require.Equal(t, []int64{11_000, 12_000}, occ)
	require.True(t, end)
	// A Schedule that goes back is an error, not a loop.
	r.sched = ScheduleFunc(func(t time.Time) time.Time { return t })
	_, _, _, _, err = k.plan(r, 15_000)
	require.ErrorContains(t, err, "not after it")
}

// The advance script is a compare-and-set on the generation and the
// watermark: a keeper that computed its plan from a watermark that has
// moved (another keeper was first) enqueues nothing, so an occurrence
// taken and acked (here: cancelled) meanwhile is never enqueued again.
func TestAdvanceIsCompareAndSet(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "rec")
	ctx := context.Background()
	now := redisNow(t, c)
	p0 := now.Truncate(time.Hour).Add(-time.Hour)
	p1 := Every(time.Hour).Next(now)
	_, err := q.Register(ctx, "a", Every(time.Hour), nil, FirstAt(p0))
	require.NoError(t, err)
	advance := func(g int64, at time.Time) []interface{} {
		t.Helper()
		id := OccurrenceID("a", p1)
		r, err := q.run(ctx, scriptAdvance, []string{q.recKey("a"), q.itemKey(id)}, "a", g, at.UnixMilli(), "", "0", p1.UnixMilli(), p1.UnixMilli(), id)
		require.NoError(t, err)
		return r
	}
	require.EqualValues(t, 1, advance(1, p0)[0])
	require.Len(t, scheduledOf(t, q, "a"), 2)
	r, err := q.Registration(ctx, "a")
	require.NoError(t, err)
	require.True(t, r.Enqueued.Equal(p1))
	require.True(t, r.Last.Equal(p0))
	_, err = q.Cancel(ctx, OccurrenceID("a", p1)) // as if taken and acked
	require.NoError(t, err)
	res := advance(1, p0) // a keeper that had not seen the first
	require.EqualValues(t, 0, res[0])
	require.EqualValues(t, p1.UnixMilli(), res[3], "the current watermark")
	require.Len(t, scheduledOf(t, q, "a"), 1, "p1 not enqueued again")
	// A plan of an older generation does nothing either.
	_, err = q.Register(ctx, "a", Every(time.Hour), []byte("new"))
	require.NoError(t, err)
	r, err = q.Registration(ctx, "a")
	require.NoError(t, err)
	res = advance(1, r.Enqueued)
	require.EqualValues(t, 0, res[0])
	require.EqualValues(t, 2, res[2], "the current generation")
	// Nor one whose watermark has not come.
	res = advance(2, r.Enqueued)
	require.EqualValues(t, 2, res[0])
	audit(t, q)
}

// An update never enqueues again an occurrence that has come: the script
// refuses a first occurrence at or before a watermark that is due (the
// caller computes it again after the watermark).
func TestRegisterUpdateKeepsWatermark(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "rec")
	ctx := context.Background()
	now := redisNow(t, c)
	past := now.Truncate(time.Hour).Add(-time.Hour)
	_, err := q.Register(ctx, "a", Every(time.Hour), []byte("1"), FirstAt(past))
	require.NoError(t, err)
	m, err := q.Take(ctx)
	require.NoError(t, err)
	require.NoError(t, m.Ack(ctx)) // the occurrence at past has come and gone
	id := OccurrenceID("a", past)
	keys := []string{q.recKey("a"), q.recsKey(), q.recxKey(), q.itemKey(id), q.itemKey(id)}
	r, err := q.run(ctx, scriptRegister, keys, "a", "every 1h0m0s", "2", "0", "0",
		past.UnixMilli(), id, past.UnixMilli(), id, past.UnixMilli(), past.UnixMilli(), 0, "rid") // dues, no job fields
	require.NoError(t, err)
	require.EqualValues(t, 5, r[0])
	require.EqualValues(t, past.UnixMilli(), r[3])
	require.Empty(t, scheduledOf(t, q, "a"), "not enqueued again")
	// Register itself starts the new payload after now.
	out, err := q.Register(ctx, "a", Every(time.Hour), []byte("2"))
	require.NoError(t, err)
	require.Equal(t, RegistrationUpdated, out)
	items := scheduledOf(t, q, "a")
	require.Len(t, items, 1)
	require.True(t, items[0].Due.After(now))
	reg, err := q.Registration(ctx, "a")
	require.NoError(t, err)
	require.True(t, reg.Last.Equal(past), "the last one that has come: %v", reg.Last)
}

// Register computes the first occurrence of an update again when the
// script finds a watermark that came after the TIME it read.
func TestRegisterRetriesAfterWatermark(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "rec")
	ctx := context.Background()
	now := redisNow(t, c)
	past := now.Truncate(time.Hour).Add(-time.Hour)
	_, err := q.Register(ctx, "a", Every(time.Hour), []byte("1"), FirstAt(past))
	require.NoError(t, err)
	// As if TIME had been read two hours ago.
	out, err := q.registerAfter(ctx, "a", Every(time.Hour), "every 1h0m0s", []byte("2"), registerConfig{}, past.Add(-time.Hour).UnixMilli())
	require.NoError(t, err)
	require.Equal(t, RegistrationUpdated, out)
	items := scheduledOf(t, q, "a")
	require.Len(t, items, 2, "the due one stays, the next one after now")
	require.Equal(t, OccurrenceID("a", past), items[0].ID)
	require.True(t, items[1].Due.Equal(Every(time.Hour).Next(now)))
}

// An occurrence is an ordinary item: a Nack retries it (Occurrence still
// says which occurrence it is, Due no longer), and a Cancel skips that
// occurrence only: the series goes on.
func TestOccurrenceIsAnOrdinaryItem(t *testing.T) {
	s := startRedis(t)
	ctx := context.Background()
	q := newQueue(t, s.client(t), "rec")
	stop := keep(t, q)
	_, err := q.Register(ctx, "job", Every(time.Second), []byte("p"))
	require.NoError(t, err)
	tctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	m, err := q.Take(tctx)
	require.NoError(t, err)
	_, o1, ok := Occurrence(m.ID)
	require.True(t, ok)
	require.NoError(t, m.NackAfter(ctx, 0))
	m, err = q.Take(tctx)
	require.NoError(t, err)
	_, at, _ := Occurrence(m.ID)
	require.True(t, at.Equal(o1), "the retry of the first occurrence")
	require.Equal(t, 2, m.Attempts)
	require.True(t, m.Due.After(o1))
	require.NoError(t, m.Ack(ctx))

	// Cancel the next one, enqueued when the first fell due.
	o2 := o1.Add(time.Second)
	eventually(t, 10*time.Second, "the second occurrence is enqueued", func() bool {
		_, err := q.Get(ctx, OccurrenceID("job", o2))
		return err == nil
	})
	_, err = q.Cancel(ctx, OccurrenceID("job", o2))
	require.NoError(t, err)
	m, err = q.Take(tctx)
	require.NoError(t, err)
	require.Equal(t, OccurrenceID("job", o2.Add(time.Second)), m.ID, "the series goes on after the cancelled one")
	require.Equal(t, "p", string(m.Payload))
	require.NoError(t, m.Ack(ctx))
	stop() // Audit needs a queue at rest
	audit(t, q)
}

// Destroy deletes the registrations with the rest of the queue.
func TestDestroyRemovesRegistrations(t *testing.T) {
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "rec")
	ctx := context.Background()
	_, err := q.Register(ctx, "a", Every(time.Hour), []byte("x"))
	require.NoError(t, err)
	_, err = q.Register(ctx, "b", Every(time.Minute), nil)
	require.NoError(t, err)
	_, err = q.Unregister(ctx, "b")
	require.NoError(t, err)
	stop := keep(t, q)
	eventually(t, 10*time.Second, "the keeper blocks in XREAD", func() bool {
		l, err := c.ClientList(ctx).Result()
		require.NoError(t, err)
		return strings.Contains(l, "cmd=xread")
	})
	stop()
	keys, err := c.Keys(ctx, "{dq:rec}:*").Result()
	require.NoError(t, err)
	require.Subset(t, keys, []string{"{dq:rec}:rec:a", "{dq:rec}:recs", "{dq:rec}:recx"})
	_, err = q.Destroy(ctx)
	require.NoError(t, err)
	keys, err = c.Keys(ctx, "{dq:rec}:*").Result()
	require.NoError(t, err)
	require.Empty(t, keys)
	regs, err := q.Registrations(ctx)
	require.NoError(t, err)
	require.Empty(t, regs)
}

// On a Cluster, with the queue's slot moving to another master twice while
// two keepers run: every occurrence of both registrations is enqueued once,
// none is missed, and the keepers' blocked XREADs follow the slot.
func TestClusterRecurringThroughSlotMigration(t *testing.T) {
	c := redistest.NewClusterWith(t, redistest.ClusterOptions{Masters: 3})
	ctx := context.Background()
	q := newQueue(t, clusterClient(t, c), "rec", WithWakeCap(time.Second))
	var stops []func()
	for range 2 {
		stops = append(stops, keep(t, newQueue(t, clusterClient(t, c), "rec")))
	}
	far := make([]EnqueueItem, 2000) // keys for the migrations to move
	for i := range far {
		far[i] = EnqueueItem{ID: fmt.Sprint("far", i), After: time.Hour}
	}
	_, err := q.EnqueueMany(ctx, far)
	require.NoError(t, err)
	everySecond, err := Cron("* * * * * *")
	require.NoError(t, err)
	_, err = q.Register(ctx, "tick", Every(time.Second), nil)
	require.NoError(t, err)
	_, err = q.Register(ctx, "cron", everySecond, nil)
	require.NoError(t, err)

	const n = 8
	got := map[string][]taken{}
	consumed := make(chan error, 1)
	go func() {
		tctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		for len(got["tick"]) < n || len(got["cron"]) < n {
			m, err := q.Take(tctx)
			if err != nil {
				consumed <- err
				return
			}
			if err := m.Ack(ctx); err != nil {
				consumed <- err
				return
			}
			name, at, _ := Occurrence(m.ID)
			got[name] = append(got[name], taken{m.ID, at, m.Due, m.ClaimedAt, m.Attempts})
		}
		consumed <- nil
	}()
	for range 2 {
		time.Sleep(1500 * time.Millisecond)
		src, err := c.MasterOf(ctx, q.db.Keys.Sched)
		require.NoError(t, err)
		var dst *redistest.Server
		for _, s := range c.Servers {
			if s != src {
				dst = s
				break
			}
		}
		t.Logf("moved the slot in %v", migrateSlot(t, c, q.db.Keys.Sched, dst))
	}
	require.NoError(t, <-consumed)
	requireConsecutive(t, Every(time.Second), got["tick"][:n])
	requireConsecutive(t, everySecond, got["cron"][:n])
	// The keepers' change feed works on the slot's new master: they learn
	// of a new registration at once.
	_, err = q.Register(ctx, "late", Every(time.Second), nil)
	require.NoError(t, err)
	requireConsecutive(t, Every(time.Second), consume(t, q, "late", 3, 20*time.Second))
	regs, err := q.Registrations(ctx)
	require.NoError(t, err)
	require.Len(t, regs, 3)
	for _, stop := range stops {
		stop()
	}
	audit(t, q)
}
