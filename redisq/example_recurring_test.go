package redisq_test

import (
	"context"
	"fmt"
	"time"

	"github.com/dq-go/delayqueue/redisq"
	"github.com/robfig/cron/v3"
)

// A recurring job registered in Redis: every process registers it at
// start (the same definition changes nothing) and keeps it going (a Worker
// does so by itself); each occurrence is enqueued once, as an ordinary
// item due at its time, whatever the number of processes.
func ExampleQueue_Register() {
	q, done := exampleQueue("jobs")
	defer done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	out, err := q.Register(ctx, "sweep", redisq.Every(time.Second), []byte(`{"task":"sweep"}`))
	fmt.Println(out, err)
	kept := make(chan error, 1)
	go func() { kept <- q.KeepRecurring(ctx) }() // in a process without a Worker

	var prev time.Time
	for range 3 {
		m, err := q.Take(ctx)
		if err != nil {
			panic(err)
		}
		name, at, _ := redisq.Occurrence(m.ID) // which occurrence this is
		if prev.IsZero() {
			fmt.Println(name, string(m.Payload))
		} else {
			fmt.Println(name, "again after", at.Sub(prev))
		}
		prev = at
		_ = m.Ack(ctx)
	}
	regs, _ := q.Registrations(ctx)
	for _, r := range regs {
		fmt.Println(r.Name, r.Spec, "next:", r.Next.Sub(prev))
	}
	cancel()
	fmt.Println("KeepRecurring returned", <-kept)
	// Output:
	// created <nil>
	// sweep {"task":"sweep"}
	// sweep again after 1s
	// sweep again after 1s
	// sweep every 1s next: 1s
	// KeepRecurring returned <nil>
}

// A cron schedule in a time zone, computed the same by every process: the
// spec is stored with the zone's name. 02:30 comes twice on the night
// summer time ends.
func ExampleCron() {
	nightly, err := redisq.Cron("CRON_TZ=Europe/Paris 30 2 * * *")
	fmt.Println(nightly, err)
	t := time.Date(2026, 10, 24, 12, 0, 0, 0, time.UTC)
	for range 3 {
		t = nightly.Next(t)
		fmt.Println(t.UTC())
	}
	// Without a zone: UTC, not the process's local zone.
	utc, _ := redisq.Cron("0 9 * * mon-fri")
	fmt.Println(utc)
	// Output:
	// CRON_TZ=Europe/Paris 30 2 * * * <nil>
	// 2026-10-25 00:30:00 +0000 UTC
	// 2026-10-25 01:30:00 +0000 UTC
	// 2026-10-26 01:30:00 +0000 UTC
	// CRON_TZ=UTC 0 9 * * mon-fri
}

// The text Register stores for a schedule, which every keeper parses back,
// and the schedules that cannot be stored.
func ExampleScheduleText() {
	paris, _ := time.LoadLocation("Europe/Paris")
	daily, _ := redisq.CronIn("0 9 * * *", paris)
	parsed, _ := cron.ParseStandard("CRON_TZ=Asia/Tokyo */15 9-17 * * 1-5") // robfig/cron, as it is
	for _, s := range []redisq.Schedule{
		redisq.Every(5 * time.Minute),
		redisq.EveryPhase(24*time.Hour, 9*time.Hour),
		daily,
		parsed,
	} {
		fmt.Println(redisq.ScheduleText(s))
	}
	local, _ := cron.ParseStandard("0 9 * * *") // in time.Local
	_, err := redisq.ScheduleText(local)
	fmt.Println(err != nil)
	_, err = redisq.CronIn("0 9 * * *", time.FixedZone("CET", 3600))
	fmt.Println(err)
	// Output:
	// every 5m0s <nil>
	// every 24h0m0s, phase 9h0m0s <nil>
	// CRON_TZ=Europe/Paris 0 9 * * * <nil>
	// CRON_TZ=Asia/Tokyo 0 0,15,30,45 9-17 * * 1-5 <nil>
	// true
	// redisq: cron spec "0 9 * * *": location "CET" cannot be stored: the zone of that name has other offsets (2000-04: 7200 s, not 3600 s)
}

// Overlap: a sync that must not run twice at once. Its consumers were
// down for three hours; back, a keeper enqueues two of the occurrences
// missed (CatchUp(2)): the first claim runs the oldest and skips the
// others, due with it, because it runs.
func ExampleOverlap() {
	q, done := exampleQueue("sync")
	defer done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first := time.Now().Truncate(time.Hour).Add(-3 * time.Hour)
	_, err := q.Register(ctx, "sync", redisq.Every(time.Hour), nil,
		redisq.FirstAt(first), redisq.CatchUp(2), redisq.Overlap(redisq.OverlapSkip))
	if err != nil {
		panic(err)
	}
	go func() { _ = q.KeepRecurring(ctx) }()
	for st, _ := q.Stats(ctx); st.Scheduled < 4; st, _ = q.Stats(ctx) {
		time.Sleep(10 * time.Millisecond) // the keeper catches up
	}
	ms, err := q.TakeBatch(ctx, 10)
	if err != nil {
		panic(err)
	}
	_, at, _ := redisq.Occurrence(ms[0].ID)
	fmt.Println(len(ms), at.Equal(first))
	r, _ := q.Registration(ctx, "sync")
	fmt.Println(r.Overlap, r.Skipped, r.LastSkipReason)
	// Output:
	// 1 true
	// skip 2 overlap
}

// CatchUpWindow: a reminder that is pointless when it would start over
// half an hour late. Its occurrence two hours ago was never claimed (no
// consumer ran): the first claim skips it.
func ExampleCatchUpWindow() {
	q, done := exampleQueue("reminders")
	defer done()
	ctx := context.Background()
	_, err := q.Register(ctx, "standup", redisq.Every(time.Hour), nil,
		redisq.FirstAt(time.Now().Truncate(time.Hour).Add(-2*time.Hour)), redisq.CatchUpWindow(30*time.Minute))
	if err != nil {
		panic(err)
	}
	tctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	_, err = q.TakeBatch(tctx, 10)
	fmt.Println(err)
	r, _ := q.Registration(ctx, "standup")
	fmt.Println(r.CatchUpWindow, r.Skipped, r.LastSkipReason)
	// Output:
	// context deadline exceeded
	// 30m0s 1 late
}

// Backfill runs past occurrences again: here the reports of the last
// three days, after a bug in them was fixed. They are due now, in order,
// each under the id of its occurrence.
func ExampleQueue_Backfill() {
	q, done := exampleQueue("reports")
	defer done()
	ctx := context.Background()
	if _, err := q.Register(ctx, "daily-report", redisq.Every(24*time.Hour), nil); err != nil {
		panic(err)
	}
	r, _ := q.Registration(ctx, "daily-report") // its next occurrence: the next midnight UTC
	res, err := q.Backfill(ctx, "daily-report", r.Enqueued.Add(-3*24*time.Hour), r.Enqueued)
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Enqueued, res.Last.Sub(res.First))
	for range 3 {
		m, err := q.Take(ctx)
		if err != nil {
			panic(err)
		}
		_, at, _ := redisq.Occurrence(m.ID)
		fmt.Println(r.Enqueued.Sub(at))
		_ = m.Ack(ctx)
	}
	// Output:
	// 3 48h0m0s
	// 72h0m0s
	// 48h0m0s
	// 24h0m0s
}
