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
