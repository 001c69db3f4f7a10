package delayqueue_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/dq-go/delayqueue"
)

// Every recurs at multiples of its period since the Unix epoch, in
// absolute time, so every process agrees on the occurrences; EveryPhase
// shifts them. (For "9:00 Paris time", daylight saving included, use a
// cron schedule: github.com/robfig/cron/v3's schedules are Schedules.)
func ExampleEvery() {
	now := time.Date(2026, 3, 5, 14, 20, 0, 0, time.UTC)
	fmt.Println(delayqueue.Every(time.Hour).Next(now))
	fmt.Println(delayqueue.Every(5 * time.Minute).Next(now))
	fmt.Println(delayqueue.EveryPhase(24*time.Hour, 9*time.Hour).Next(now))
	fmt.Println(delayqueue.EveryPhase(time.Hour, 15*time.Minute).Next(now))
	// Output:
	// 2026-03-05 15:00:00 +0000 UTC
	// 2026-03-05 14:25:00 +0000 UTC
	// 2026-03-06 09:00:00 +0000 UTC
	// 2026-03-05 15:15:00 +0000 UTC
}

// A recurring key: each occurrence handed out queues the next under the
// same lock, so the key is always there to look up or cancel.
func ExampleKeyed_ScheduleRecurring() {
	jobs := delayqueue.NewKeyed[string, string]()
	period := 10 * time.Millisecond // 5*time.Minute in real life
	if _, err := jobs.ScheduleRecurring("sweep", "retry failed payments", delayqueue.Every(period)); err != nil {
		panic(err)
	}

	ctx := context.Background()
	var last time.Time
	for range 3 {
		e, err := jobs.TakeEntry(ctx) // Deadline: the occurrence handed out
		if err != nil {
			panic(err)
		}
		_, next, _ := jobs.Get("sweep") // already queued: the next occurrence
		fmt.Println(e.Key, e.Value,
			"| on the grid:", e.Deadline.UnixNano()%int64(period) == 0,
			"| after the last:", e.Deadline.After(last),
			"| next queued:", next.Sub(e.Deadline) >= period)
		last = e.Deadline
	}
	jobs.Cancel("sweep") // stops the series
	fmt.Println("queued:", jobs.Len())
	// Output:
	// sweep retry failed payments | on the grid: true | after the last: true | next queued: true
	// sweep retry failed payments | on the grid: true | after the last: true | next queued: true
	// sweep retry failed payments | on the grid: true | after the last: true | next queued: true
	// queued: 0
}

// A consumer that was busy for several periods gets one occurrence for
// all it missed by default; with CatchUp(n), up to n of the missed ones
// one by one, oldest first.
func ExampleCatchUp() {
	jobs := delayqueue.NewKeyed[string, int]()
	start := time.Now().Add(-55 * time.Minute) // as if down for 55 minutes
	if _, err := jobs.ScheduleRecurring("coalesced", 0, delayqueue.Every(10*time.Minute), delayqueue.FirstAt(start)); err != nil {
		panic(err)
	}
	if _, err := jobs.ScheduleRecurring("caught up", 0, delayqueue.Every(10*time.Minute), delayqueue.FirstAt(start),
		delayqueue.CatchUp(3)); err != nil {
		panic(err)
	}
	n := map[string]int{}
	for _, it := range jobs.DrainExpired(nil, 0) {
		n[it.Key]++
	}
	fmt.Println("coalesced:", n["coalesced"], "caught up:", n["caught up"])
	// Output:
	// coalesced: 1 caught up: 4
}

// Save recurring keys across a restart. Shutdown (or Snapshot) returns
// each with its occurrence queued and its Schedule; a Schedule is code, not
// data, so store your own record of it (here the schedules the program
// sets up, by key) and give it back to Restore, which resumes each series
// where it was.
func ExampleKeyed_Restore() {
	schedules := []struct {
		key string
		s   delayqueue.Schedule // a cron.Schedule parsed from its spec, say
	}{
		{"sweep", delayqueue.Every(5 * time.Minute)},
		{"digest", delayqueue.EveryPhase(24*time.Hour, 9*time.Hour)},
	}
	byKey := map[string]delayqueue.Schedule{}
	jobs := delayqueue.NewKeyed[string, string]()
	for _, j := range schedules {
		byKey[j.key] = j.s
		if _, err := jobs.AddRecurring(j.key, j.key+" job", j.s); err != nil {
			panic(err)
		}
	}
	if _, err := jobs.Schedule("reminder", "call back", time.Now().Add(25*time.Hour)); err != nil {
		panic(err)
	}

	rest, err := jobs.Shutdown(context.Background())
	if err != nil {
		panic(err)
	}
	type record struct { // what the program stores: no Schedule
		Key, Value string
		Deadline   time.Time
	}
	var saved []record
	for _, e := range rest {
		saved = append(saved, record{e.Key, e.Value, e.Deadline})
	}
	data, err := json.Marshal(saved) // to a file, a database...
	if err != nil {
		panic(err)
	}

	// The next start.
	var loaded []record
	if err := json.Unmarshal(data, &loaded); err != nil {
		panic(err)
	}
	restored := delayqueue.NewKeyed[string, string]()
	for _, r := range loaded { // in the order saved, so ties keep their order
		e := delayqueue.KeyedEntry[string, string]{Key: r.Key, Value: r.Value, Deadline: r.Deadline, Schedule: byKey[r.Key]}
		if _, err := restored.Restore(e); err != nil {
			panic(err)
		}
	}
	for _, e := range restored.Snapshot() {
		fmt.Printf("%s: %q, %v\n", e.Key, e.Value, e.Schedule)
	}
	// Output:
	// sweep: "sweep job", every 5m0s
	// digest: "digest job", every 24h0m0s, phase 9h0m0s
	// reminder: "call back", <nil>
}
