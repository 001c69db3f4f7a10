package redisq

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A Jittered schedule's text is its schedule's and its jitter, read back
// into the same Schedule; a jitter that cannot be kept is refused.
func TestJitterText(t *testing.T) {
	for _, s := range []Schedule{
		Jitter(Every(time.Hour), 5*time.Minute),
		Jitter(EveryPhase(24*time.Hour, 9*time.Hour), time.Hour),
		Jitter(mustCron(t, "CRON_TZ=Europe/Paris 0 9 * * *"), 1500*time.Millisecond),
	} {
		text, err := ScheduleText(s)
		require.NoError(t, err)
		back, err := ParseSchedule(text)
		require.NoError(t, err, text)
		require.Equal(t, s, back, text)
		again, err := ScheduleText(back)
		require.NoError(t, err)
		require.Equal(t, text, again)
	}
	text, _ := ScheduleText(Jitter(Every(time.Hour), 5*time.Minute))
	require.Equal(t, "every 1h0m0s; jitter 5m0s", text)
	for _, bad := range []Jittered{
		Jitter(Every(time.Hour), 0),
		Jitter(Every(time.Hour), -time.Second),
		Jitter(Every(time.Hour), 1500*time.Microsecond),
		Jitter(Every(time.Hour), MaxJitter+time.Millisecond),
		Jitter(Jitter(Every(time.Hour), time.Second), time.Second),
		Jitter(nil, time.Second),
	} {
		_, err := ScheduleText(bad)
		require.Error(t, err, "%+v", bad)
	}
	for _, bad := range []string{"every 1h0m0s; jitter 0s", "every 1h0m0s; jitter x", "nonsense; jitter 1s", "every 1h0m0s; jitter 1s; jitter 1s"} {
		_, err := ParseSchedule(bad)
		require.Error(t, err, bad)
	}
}

func mustCron(t *testing.T, spec string) CronSchedule {
	t.Helper()
	cs, err := Cron(spec)
	require.NoError(t, err)
	return cs
}

// Each occurrence of a jittered registration is delivered once, by three
// keepers, under its own id (its occurrence's time), due within the jitter
// after its occurrence and never before that due time; the offsets differ
// between occurrences and between registrations of the same schedule, and
// every process computes the same (a re-registration keeps the due time).
func TestKeepRecurringJitter(t *testing.T) {
	s := startRedis(t)
	ctx := context.Background()
	q := newQueue(t, s.client(t), "recj")
	for range 3 {
		keep(t, newQueue(t, s.client(t), "recj"))
	}
	const max = 700 * time.Millisecond
	sched := Jitter(Every(time.Second), max)
	_, err := q.Register(ctx, "tick", sched, []byte("t"))
	require.NoError(t, err)
	got := consume(t, q, "tick", 5, 30*time.Second)
	offsets := map[time.Duration]bool{}
	for i, x := range got {
		require.Equal(t, OccurrenceID("tick", x.at), x.id)
		off := x.due.Sub(x.at)
		require.True(t, off >= 0 && off < max, "%s due %v after its occurrence", x.id, off)
		require.Equal(t, x.at.UnixMilli()+off.Milliseconds(), occurrenceDue(sched, "tick", x.at.UnixMilli()))
		require.False(t, x.claimed.Before(x.due), "%s claimed at %v, before its due time %v", x.id, x.claimed, x.due)
		require.Equal(t, 1, x.attempts, x.id)
		if i > 0 {
			require.True(t, x.at.Equal(got[i-1].at.Add(time.Second)), "after %v came %v", got[i-1].at, x.at)
		}
		offsets[off] = true
	}
	require.Greater(t, len(offsets), 1, "every occurrence has the same offset: %v", offsets)

	// Registrations of one schedule are spread: their next occurrences'
	// offsets are not all the same.
	at := time.Now().Add(time.Hour).Truncate(time.Hour)
	spread := map[int64]bool{}
	for _, name := range []string{"a", "b", "c", "d", "e", "f"} {
		spread[occurrenceDue(Jitter(Every(time.Hour), time.Hour), name, at.UnixMilli())] = true
	}
	require.Greater(t, len(spread), 1)

	// Register enqueues the first occurrence with its offset too; the same
	// registration again is unchanged, and so is its item.
	hourly := Jitter(Every(time.Hour), time.Hour)
	_, err = q.Register(ctx, "hourly", hourly, nil)
	require.NoError(t, err)
	first := scheduledOf(t, q, "hourly")
	require.Len(t, first, 1)
	_, occ, _ := Occurrence(first[0].ID)
	require.Equal(t, occurrenceDue(hourly, "hourly", occ.UnixMilli()), first[0].Due.UnixMilli())
	require.True(t, !first[0].Due.Before(occ) && first[0].Due.Before(occ.Add(time.Hour)), "due %v for %v", first[0].Due, occ)
	out, err := q.Register(ctx, "hourly", hourly, nil)
	require.NoError(t, err)
	require.Equal(t, RegistrationUnchanged, out)
	require.Equal(t, first, scheduledOf(t, q, "hourly"))
	reg, err := q.Registration(ctx, "hourly")
	require.NoError(t, err)
	require.Equal(t, "every 1h0m0s; jitter 1h0m0s", reg.Spec)
	require.Equal(t, Schedule(hourly), reg.Schedule)
	require.True(t, occ.Equal(reg.Enqueued), "the watermark is the occurrence's: %v", reg.Enqueued)
	require.True(t, first[0].Due.Equal(reg.Next), "the next run is the item's due time: %v", reg.Next)
}
