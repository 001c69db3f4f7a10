package redisq

import (
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/robfig/cron/v3"
	"github.com/stretchr/testify/require"
)

// naiveNext is the first instant epoch + phase + k*period strictly after t,
// computed with big integers.
func naiveNext(period, phase time.Duration, t time.Time) time.Time {
	ns := new(big.Int).Mul(big.NewInt(t.Unix()), big.NewInt(1e9))
	ns.Add(ns, big.NewInt(int64(t.Nanosecond())))
	p := big.NewInt(int64(period))
	x := new(big.Int).Sub(ns, big.NewInt(int64(phase)))
	k := new(big.Int).Div(x, p) // Euclidean: floor for p > 0
	k.Add(k, big.NewInt(1))
	next := new(big.Int).Mul(k, p)
	next.Add(next, big.NewInt(int64(phase)))
	d := new(big.Int).Sub(next, ns)
	return t.Add(time.Duration(d.Int64()))
}

func TestIntervalNextMatchesEnumeration(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	periods := []time.Duration{time.Millisecond, time.Second, 7 * time.Second, time.Hour, 24 * time.Hour, 7 * 24 * time.Hour, 1<<62 + 12345}
	for i := 0; i < 20000; i++ {
		p := periods[r.IntN(len(periods))]
		if r.IntN(3) == 0 {
			p = time.Duration(r.Int64N(int64(365*24*time.Hour))) + 1
		}
		phase := time.Duration(r.Int64()) - time.Duration(r.Int64())
		var t0 time.Time
		switch r.IntN(3) {
		case 0:
			t0 = time.Unix(r.Int64N(4e9)-1e9, r.Int64N(1e9))
		case 1:
			t0 = time.Unix(0, 0).Add(phase).Add(p * time.Duration(r.IntN(100)-50)) // on an occurrence
		default:
			t0 = time.Unix(r.Int64N(1<<40)-1<<39, r.Int64N(1e9))
		}
		got := EveryPhase(p, phase).Next(t0)
		want := naiveNext(p, phase, t0)
		require.True(t, got.Equal(want), "period %v phase %v t %v: got %v want %v", p, phase, t0, got, want)
		require.True(t, got.After(t0))
	}
	require.True(t, Interval{}.Next(time.Now()).IsZero())
	require.Panics(t, func() { Every(0) })
	require.Panics(t, func() { EveryPhase(-time.Second, 0) })
}

func TestScheduleTextRoundTrip(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	require.NoError(t, err)
	must := func(s Schedule, err error) Schedule {
		t.Helper()
		require.NoError(t, err)
		return s
	}
	fromCron := func(spec string) Schedule {
		s, err := cron.ParseStandard(spec)
		require.NoError(t, err)
		return s
	}
	withSeconds := cron.NewParser(cron.Second | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow)
	secs, err := withSeconds.Parse("CRON_TZ=Asia/Tokyo */15 0-30/10 9-17 * * mon-fri")
	require.NoError(t, err)
	for _, c := range []struct {
		s    Schedule
		text string
	}{
		{Every(time.Hour), "every 1h0m0s"},
		{EveryPhase(24*time.Hour, 9*time.Hour), "every 24h0m0s, phase 9h0m0s"},
		{EveryPhase(time.Hour, -15*time.Minute), "every 1h0m0s, phase 45m0s"},
		{EveryPhase(time.Hour, 25*time.Hour), "every 1h0m0s"},
		{Interval{Period: 1500 * time.Millisecond, Phase: 3 * time.Millisecond}, "every 1.5s, phase 3ms"},
		{must(Cron("0 9 * * *")), "CRON_TZ=UTC 0 9 * * *"},
		{must(Cron("  TZ=Europe/Paris   0  9 * *   1-5 ")), "CRON_TZ=Europe/Paris 0 9 * * 1-5"},
		{must(Cron("CRON_TZ=America/New_York @daily")), "CRON_TZ=America/New_York @daily"},
		{must(Cron("TZ= 0 9 * * *")), "CRON_TZ=UTC 0 9 * * *"},
		{must(Cron("@every 90s")), "CRON_TZ=UTC @every 1m30s"},
		{must(Cron("*/5 * * * * *")), "CRON_TZ=UTC */5 * * * * *"},
		{must(CronIn("0 9 * * *", paris)), "CRON_TZ=Europe/Paris 0 9 * * *"},
		{must(CronIn("@hourly", time.UTC)), "CRON_TZ=UTC @hourly"},
		{must(CronIn("0 9 * * *", time.FixedZone("Etc/GMT-1", 3600))), "CRON_TZ=Etc/GMT-1 0 9 * * *"},
		{must(ParseSchedule("every 5m0s")), "every 5m0s"},
		{must(ParseSchedule("  every 2h,  phase 30m ")), "every 2h0m0s, phase 30m0s"},
		{fromCron("CRON_TZ=Europe/Paris 0 9 * * *"), "CRON_TZ=Europe/Paris 0 0 9 * * *"},
		{fromCron("TZ=UTC */15 8-18 1,15 * *"), "CRON_TZ=UTC 0 0,15,30,45 8-18 1,15 * *"},
		{fromCron("TZ=UTC 0 0 1 * 1"), "CRON_TZ=UTC 0 0 0 1 * 1"},
		{fromCron("TZ=UTC @weekly"), "CRON_TZ=UTC 0 0 0 * * 0"},
		{fromCron("TZ=UTC 0 12 * jan,jul sun"), "CRON_TZ=UTC 0 0 12 * 1,7 0"},
		{secs, "CRON_TZ=Asia/Tokyo 0,15,30,45 0,10,20,30 9-17 * * 1-5"},
		{fromCron("@every 1h"), "CRON_TZ=UTC @every 1h0m0s"},
		{cron.Every(90 * time.Second), "CRON_TZ=UTC @every 1m30s"},
	} {
		text, err := ScheduleText(c.s)
		require.NoError(t, err, "%#v", c.s)
		require.Equal(t, c.text, text)
		back, err := ParseSchedule(text)
		require.NoError(t, err, text)
		again, err := ScheduleText(back)
		require.NoError(t, err)
		require.Equal(t, text, again, "the text is a fixed point")
		// The same occurrences, from times around the year and the DST
		// transitions.
		r := rand.New(rand.NewPCG(3, 4))
		for i := 0; i < 200; i++ {
			t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(r.Int64N(int64(365 * 24 * time.Hour))))
			if i%2 == 0 {
				t0 = t0.Truncate(time.Second) // on a second: robfig's starting point
			}
			a, b := c.s.Next(t0), back.Next(t0)
			require.True(t, a.Equal(b), "%s from %v: %v vs %v", text, t0, a, b)
		}
	}
}

func TestCronDaylightSavingTime(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	require.NoError(t, err)
	utc := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		require.NoError(t, err)
		return v
	}
	run := func(spec string, from time.Time, n int) []time.Time {
		s, err := ParseSchedule(spec)
		require.NoError(t, err)
		var out []time.Time
		for t := from; len(out) < n; {
			t = s.Next(t)
			out = append(out, t.UTC())
		}
		return out
	}
	// 2026-03-29: 02:00 CET becomes 03:00 CEST. 02:30 does not exist: no
	// occurrence that day (robfig/cron documents it).
	require.Equal(t, []time.Time{
		utc("2026-03-28T01:30:00Z"), // 02:30 CET
		utc("2026-03-30T00:30:00Z"), // 02:30 CEST
		utc("2026-03-31T00:30:00Z"),
	}, run("CRON_TZ=Europe/Paris 30 2 * * *", time.Date(2026, 3, 27, 12, 0, 0, 0, paris), 3))
	// 09:00 Paris is 08:00 UTC before, 07:00 UTC after.
	require.Equal(t, []time.Time{utc("2026-03-28T08:00:00Z"), utc("2026-03-29T07:00:00Z"), utc("2026-03-30T07:00:00Z")},
		run("CRON_TZ=Europe/Paris 0 9 * * *", time.Date(2026, 3, 27, 12, 0, 0, 0, paris), 3))
	// CronIn: the same with the location given apart.
	in, err := CronIn("0 9 * * *", paris)
	require.NoError(t, err)
	require.True(t, in.Next(time.Date(2026, 3, 28, 12, 0, 0, 0, time.UTC)).Equal(utc("2026-03-29T07:00:00Z")))
	// 2026-10-25: 03:00 CEST becomes 02:00 CET. 02:30 comes twice, and so
	// does the occurrence.
	require.Equal(t, []time.Time{
		utc("2026-10-24T00:30:00Z"), // 02:30 CEST
		utc("2026-10-25T00:30:00Z"), // 02:30 CEST
		utc("2026-10-25T01:30:00Z"), // 02:30 CET
		utc("2026-10-26T01:30:00Z"), // 02:30 CET
	}, run("CRON_TZ=Europe/Paris 30 2 * * *", time.Date(2026, 10, 23, 12, 0, 0, 0, paris), 4))
	// Hourly across the repeated hour: 02:00 twice.
	require.Equal(t, []time.Time{
		utc("2026-10-24T23:00:00Z"), // 01:00 CEST
		utc("2026-10-25T00:00:00Z"), // 02:00 CEST
		utc("2026-10-25T01:00:00Z"), // 02:00 CET
		utc("2026-10-25T02:00:00Z"), // 03:00 CET
	}, run("CRON_TZ=Europe/Paris 0 * * * *", time.Date(2026, 10, 25, 0, 30, 0, 0, paris), 4))
	// An Interval ignores zones: every 24h stays on 09:00 UTC.
	require.Equal(t, []time.Time{utc("2026-03-28T09:00:00Z"), utc("2026-03-29T09:00:00Z")},
		run("every 24h0m0s, phase 9h0m0s", time.Date(2026, 3, 27, 12, 0, 0, 0, paris), 2))
}

func TestBadSchedules(t *testing.T) {
	for _, c := range []struct {
		spec string
		want string
	}{
		{"", "no schedule"},
		{"   ", "no schedule"},
		{"0 9 * *", "expected 5 to 6 fields"},
		{"0 9 * * * * *", "expected 5 to 6 fields"},
		{"61 * * * *", "above maximum"},
		{"*/0 * * * *", "step of range"},
		{"a b c d e", "failed to parse int"},
		{"@fortnightly", "unrecognized descriptor"},
		{"TZ=UTC", "a zone prefix and no schedule"},
		{"CRON_TZ=Europe/Paris", "a zone prefix and no schedule"},
		{"CRON_TZ=Nowhere/Atlantis 0 9 * * *", "unknown time zone"},
		{"CRON_TZ=Local 0 9 * * *", "the zone Local is each process's own"},
		{"@every 500ms", "whole number of seconds"},
		{"@every -1s", "whole number of seconds"},
		{"@every 1.5s", "whole number of seconds"},
		{"@every", "@every takes one duration"},
		{"@every soon", "invalid duration"},
		{"every 0s", "not positive"},
		{"every -1h", "not positive"},
		{"every 1.5ms", "not a whole number of milliseconds"},
		{"every 1s, phase 1.5ms", "phase 1.5ms is not a whole number of milliseconds"},
		{"every often", "invalid duration"},
		{"every 1h, phase soon", "invalid duration"},
	} {
		_, err := ParseSchedule(c.spec)
		require.Error(t, err, "%q", c.spec)
		require.Contains(t, err.Error(), c.want, "%q", c.spec)
		require.True(t, strings.HasPrefix(err.Error(), "redisq: "), err.Error())
	}
	// Regression (issue 24, item 16): the error quoted the rewritten text
	// ("CRON_TZ=UTC 61 * * * *"), not the spec given.
	_, err := Cron("61 * * * *")
	require.ErrorContains(t, err, `cron spec "61 * * * *": `)
	require.NotContains(t, err.Error(), "CRON_TZ")
	paris, err := time.LoadLocation("Europe/Paris")
	require.NoError(t, err)
	for _, c := range []struct {
		loc  *time.Location
		spec string
		want string
	}{
		{time.Local, "0 9 * * *", "time.Local is each process's own zone"},
		{time.FixedZone("UTC+1", 3600), "0 9 * * *", `location "UTC+1" cannot be stored`},
		{time.FixedZone("Europe/Paris", 3600), "0 9 * * *", "the zone of that name has other offsets"},
		{paris, "TZ=UTC 0 9 * * *", "has a zone prefix and CronIn a location"},
		{paris, "0 9 * *", "expected 5 to 6 fields"},
	} {
		_, err := CronIn(c.spec, c.loc)
		require.Error(t, err, "%q in %v", c.spec, c.loc)
		require.Contains(t, err.Error(), c.want)
	}
	require.Panics(t, func() { _, _ = CronIn("0 9 * * *", nil) })

	// Schedules that cannot be stored.
	local, err := cron.ParseStandard("0 9 * * *") // in time.Local
	require.NoError(t, err)
	for _, c := range []struct {
		s    Schedule
		want string
	}{
		{nil, "nil Schedule"},
		{ScheduleFunc(func(t time.Time) time.Time { return t.Add(time.Hour) }), "a schedule of type redisq.ScheduleFunc cannot be stored in Redis"},
		{local, "time.Local is each process's own zone"},
		{CronSchedule{}, "the zero CronSchedule"},
		{Interval{}, "not positive"},
		{Interval{Period: 1500 * time.Microsecond}, "not a whole number of milliseconds"},
		{Interval{Period: time.Second, Phase: time.Microsecond}, "phase 1µs is not a whole number of milliseconds"},
		{cron.ConstantDelaySchedule{Delay: 1500 * time.Millisecond}, "to the second"},
		{&cron.SpecSchedule{Second: 1, Minute: 1, Hour: 1, Dom: 1 << 1, Month: 1 << 1, Dow: 0x7f | cronStar}, "without a location"},
		{&cron.SpecSchedule{Second: 1 << 60, Minute: 1, Hour: 1, Dom: 1 << 1, Month: 1 << 1, Dow: 0x7f | cronStar, Location: time.UTC}, "second field has values out of 0-59"},
		{&cron.SpecSchedule{Second: 1, Minute: 1, Hour: 1 | cronStar, Dom: 1 << 1, Month: 1 << 1, Dow: 0x7f | cronStar, Location: time.UTC}, "hour field is marked * but does not hold every value"},
		{&cron.SpecSchedule{Second: 1, Minute: 0, Hour: 1, Dom: 1 << 1, Month: 1 << 1, Dow: 0x7f | cronStar, Location: time.UTC}, "minute field holds no value"},
	} {
		_, err := ScheduleText(c.s)
		require.Error(t, err, "%#v", c.s)
		require.Contains(t, err.Error(), c.want)
		require.True(t, strings.HasPrefix(err.Error(), "redisq: "), err.Error())
	}
	_, err = ScheduleText(ScheduleFunc(nil))
	require.ErrorContains(t, err, "use redisq.Every, EveryPhase, Cron, CronIn or ParseSchedule")
}

// ScheduleFunc adapts a function to a Schedule, as the core's does: a
// Schedule that cannot be stored.
type ScheduleFunc func(time.Time) time.Time

func (f ScheduleFunc) Next(t time.Time) time.Time { return f(t) }

func TestOccurrenceID(t *testing.T) {
	at := time.Date(2026, 3, 29, 9, 0, 0, 0, time.FixedZone("CEST", 2*3600))
	require.Equal(t, "rec:digest@2026-03-29T07:00:00Z", OccurrenceID("digest", at))
	require.Equal(t, "rec:a@b:c@2026-03-29T07:00:00.001Z", OccurrenceID("a@b:c", at.Add(time.Nanosecond)), "rounded up to the ms")
	require.Equal(t, "rec:x@2026-03-29T07:00:00.25Z", OccurrenceID("x", at.Add(250*time.Millisecond)))
	for _, id := range []string{"rec:digest@2026-03-29T07:00:00Z", "rec:a@b:c@2026-03-29T07:00:00.001Z", "rec:@2026-03-29T07:00:00Z"} {
		name, when, ok := Occurrence(id)
		require.True(t, ok, id)
		require.Equal(t, id, occurrencePrefix+name+"@"+when.Format(time.RFC3339Nano))
	}
	for _, id := range []string{"digest@2026-03-29T07:00:00Z", "rec:digest", "rec:digest@yesterday", "rec:"} {
		_, _, ok := Occurrence(id)
		require.False(t, ok, id)
	}
}
