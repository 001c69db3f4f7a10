package dqprom_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dq-go/delayqueue/dqprom"
	"github.com/dq-go/delayqueue/redisq"
	"github.com/dq-go/delayqueue/redisq/redistest"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"
)

func secs(t time.Time) string { return fmt.Sprint(float64(t.UnixMilli()) / 1e3) }

func TestRecurringCollector(t *testing.T) {
	s := redistest.New(t)
	c := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer c.Close()
	ctx := context.Background()
	q := newQueue(t, c, "mail")
	now, err := c.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	hour := redisq.Every(time.Hour)
	past := now.Truncate(time.Hour).Add(-3 * time.Hour)
	// No process keeps these: "hourly" is behind (its next occurrence is
	// in the past), "daily" has not come yet.
	for _, r := range []struct {
		name string
		s    redisq.Schedule
		opts []redisq.RegisterOption
	}{
		{"hourly", hour, []redisq.RegisterOption{redisq.FirstAt(past)}},
		{"daily", redisq.EveryPhase(24*time.Hour, 9*time.Hour), nil},
		{"bad\xffname\n", hour, nil},
	} {
		if _, err := q.Register(ctx, r.name, r.s, nil, r.opts...); err != nil {
			t.Fatal(err)
		}
	}
	want := fmt.Sprintf(`
# HELP redisq_recurring_last_occurrence_timestamp_seconds When the latest occurrence of the registration that has come was due (Unix time by the Redis clock); absent before the first.
# TYPE redisq_recurring_last_occurrence_timestamp_seconds gauge
redisq_recurring_last_occurrence_timestamp_seconds{name="hourly",queue="mail"} %s
# HELP redisq_recurring_next_occurrence_timestamp_seconds When the next run of the registration is due (Unix time by the Redis clock); in the past when no process keeps it (KeepRecurring), absent when its series ended or this exporter cannot compute its schedule.
# TYPE redisq_recurring_next_occurrence_timestamp_seconds gauge
redisq_recurring_next_occurrence_timestamp_seconds{name="bad\\xffname\\x0a",queue="mail"} %s
redisq_recurring_next_occurrence_timestamp_seconds{name="daily",queue="mail"} %s
redisq_recurring_next_occurrence_timestamp_seconds{name="hourly",queue="mail"} %s
# HELP redisq_recurring_registrations Recurring registrations of the queue (redisq Queue.Register).
# TYPE redisq_recurring_registrations gauge
redisq_recurring_registrations{queue="mail"} 3
# HELP redisq_recurring_skipped_occurrences_total Occurrences of the registration that its occurrence policy skipped (redisq Overlap, CatchUpWindow): deleted unstarted because an earlier one ran, or too late.
# TYPE redisq_recurring_skipped_occurrences_total counter
redisq_recurring_skipped_occurrences_total{name="bad\\xffname\\x0a",queue="mail"} 0
redisq_recurring_skipped_occurrences_total{name="daily",queue="mail"} 0
redisq_recurring_skipped_occurrences_total{name="hourly",queue="mail"} 0
`, secs(past), secs(hour.Next(now)), secs(redisq.EveryPhase(24*time.Hour, 9*time.Hour).Next(now)), secs(past.Add(time.Hour)))
	// The watermark and the sighting of each, as Registrations reads them.
	regs, err := q.Registrations(ctx)
	if err != nil {
		t.Fatal(err)
	}
	enq := `
# HELP redisq_recurring_enqueued_occurrence_timestamp_seconds The latest occurrence of the registration that a keeper enqueued (Unix time by the Redis clock): a keeper enqueues the next one when it falls due, so it is in the past only while no process able to compute the schedule keeps it.
# TYPE redisq_recurring_enqueued_occurrence_timestamp_seconds gauge
`
	seen := `
# HELP redisq_recurring_seen_timestamp_seconds When live code last registered the registration (Registration.Seen: Register, then every minute the keeper of the registering process); 0 when none of this redisq version has.
# TYPE redisq_recurring_seen_timestamp_seconds gauge
`
	for _, r := range regs {
		if r.Seen.IsZero() {
			t.Fatalf("%q not seen at Register", r.Name)
		}
		l := dqprom.QueueLabel(r.Name)
		if l != r.Name {
			l = `bad\\xffname\\x0a`
		}
		enq += fmt.Sprintf("redisq_recurring_enqueued_occurrence_timestamp_seconds{name=\"%s\",queue=\"mail\"} %s\n", l, secs(r.Enqueued))
		seen += fmt.Sprintf("redisq_recurring_seen_timestamp_seconds{name=\"%s\",queue=\"mail\"} %s\n", l, secs(r.Seen))
	}
	for _, col := range []prometheus.Collector{dqprom.NewRecurringCollector(q), dqprom.NewRecurringServerCollector(c)} {
		if err := testutil.CollectAndCompare(col, strings.NewReader(want+enq+seen)); err != nil {
			t.Error(err)
		}
	}

	// A queue without registrations, found on the server.
	if _, err := newQueue(t, c, "other").EnqueueAfter(ctx, "x", nil, time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := testutil.CollectAndCompare(dqprom.NewRecurringServerCollector(c), strings.NewReader(`
# HELP redisq_recurring_registrations Recurring registrations of the queue (redisq Queue.Register).
# TYPE redisq_recurring_registrations gauge
redisq_recurring_registrations{queue="mail"} 3
redisq_recurring_registrations{queue="other"} 0
`), "redisq_recurring_registrations"); err != nil {
		t.Error(err)
	}

	// Beside the queue collector, in one registry: no metric of both.
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(dqprom.NewRedisCollector(q), dqprom.NewRecurringCollector(q))
	if _, err := reg.Gather(); err != nil {
		t.Fatal(err)
	}
}

// A queue whose registrations cannot be read reports why; a closed one
// reports nothing.
func TestRecurringCollectorFailures(t *testing.T) {
	s := redistest.New(t)
	c := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1})
	defer c.Close()
	ctx := context.Background()
	q := newQueue(t, c, "mail")
	if _, err := q.Register(ctx, "hourly", redisq.Every(time.Hour), nil); err != nil {
		t.Fatal(err)
	}
	closed := newQueue(t, c, "closed")
	_ = closed.Close()
	col := dqprom.NewRecurringCollectorWithOptions([]*redisq.Queue{q, closed}, dqprom.WithTimeout(2*time.Second))
	if n := testutil.CollectAndCount(col, "redisq_recurring_next_occurrence_timestamp_seconds"); n != 1 {
		t.Fatalf("%d next occurrences, want 1 (none for the closed queue)", n)
	}
	s.Close()
	_, body := served(t, col)
	wantLines(t, body, `redisq_recurring_scrape_error{error="dial tcp `, `queue="mail"} 1`)
	if strings.Contains(body, "redisq_recurring_registrations") {
		t.Errorf("registrations reported from a stopped server:\n%s", body)
	}
}

// Regression (issue 24, item 2): a registration whose schedule this
// version cannot parse (written by a newer one) had no next-occurrence
// series and no error, so the documented "behind" alert never fired. It is
// a scrape error naming it, and its enqueued occurrence is still exported
// (once it has come, no next run can be computed).
func TestRecurringCollectorUnknownSchedule(t *testing.T) {
	s := redistest.New(t)
	c := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer c.Close()
	ctx := context.Background()
	q := newQueue(t, c, "q")
	if _, err := q.Register(ctx, "x", redisq.Every(5*time.Minute), nil); err != nil {
		t.Fatal(err)
	}
	if err := c.HSet(ctx, "{dq:q}:rec:x", "s", "every 5m jitter 10s").Err(); err != nil {
		t.Fatal(err)
	}
	_, body := served(t, dqprom.NewRecurringCollector(q))
	wantLines(t, body, `redisq_recurring_scrape_error{error="registration \"x\": schedule \"every 5m jitter 10s\" cannot be computed`, `queue="q"} 1`)
	wantLines(t, body, `redisq_recurring_enqueued_occurrence_timestamp_seconds{name="x",queue="q"} `)
}

// A paused registration has its pause time and no next run; resumed, the
// next run is back and the pause gone.
func TestRecurringPaused(t *testing.T) {
	s := redistest.New(t)
	c := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer c.Close()
	ctx := context.Background()
	q := newQueue(t, c, "mail")
	if _, err := q.Register(ctx, "daily", redisq.EveryPhase(24*time.Hour, 9*time.Hour), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := q.PauseRecurring(ctx, "daily"); err != nil {
		t.Fatal(err)
	}
	g, err := q.Registration(ctx, "daily")
	if err != nil {
		t.Fatal(err)
	}
	col := dqprom.NewRecurringCollector(q)
	want := fmt.Sprintf(`
# HELP redisq_recurring_paused_timestamp_seconds When the registration was paused (redisq Queue.PauseRecurring; Unix time by the Redis clock): no occurrence is enqueued until it is resumed. Absent when it is not paused.
# TYPE redisq_recurring_paused_timestamp_seconds gauge
redisq_recurring_paused_timestamp_seconds{name="daily",queue="mail"} %s
`, secs(g.Paused))
	if err := testutil.CollectAndCompare(col, strings.NewReader(want), "redisq_recurring_paused_timestamp_seconds", "redisq_recurring_next_occurrence_timestamp_seconds"); err != nil {
		t.Error(err)
	}
	if _, err := q.ResumeRecurring(ctx, "daily"); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(col, "redisq_recurring_paused_timestamp_seconds", "redisq_recurring_next_occurrence_timestamp_seconds"); n != 1 {
		t.Errorf("after resume: %d series, want the next run alone", n)
	}
}

// The occurrences a registration's policy skipped are counted.
func TestRecurringSkipped(t *testing.T) {
	s := redistest.New(t)
	c := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer c.Close()
	ctx := context.Background()
	q := newQueue(t, c, "mail")
	// Its first occurrence is a day late: the claim skips it.
	first := time.Now().Add(-24 * time.Hour)
	if _, err := q.Register(ctx, "hourly", redisq.Every(time.Hour), nil, redisq.FirstAt(first), redisq.CatchUpWindow(time.Minute)); err != nil {
		t.Fatal(err)
	}
	tctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if ms, err := q.TakeBatch(tctx, 10); err == nil {
		t.Fatalf("claimed %d, want the late occurrence skipped", len(ms))
	}
	want := `
# HELP redisq_recurring_skipped_occurrences_total Occurrences of the registration that its occurrence policy skipped (redisq Overlap, CatchUpWindow): deleted unstarted because an earlier one ran, or too late.
# TYPE redisq_recurring_skipped_occurrences_total counter
redisq_recurring_skipped_occurrences_total{name="hourly",queue="mail"} 1
`
	if err := testutil.CollectAndCompare(dqprom.NewRecurringCollector(q), strings.NewReader(want), "redisq_recurring_skipped_occurrences_total"); err != nil {
		t.Error(err)
	}
}
