package redisq

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/dq-go/delayqueue"
	"github.com/robfig/cron/v3"
)

// This file holds the schedules of recurring registrations (see
// Queue.Register) and their text. A registration is kept going by every
// process that runs a keeper, so its schedule must mean the same in all of
// them: it is stored as a canonical text, which every process parses back
// into the same Schedule (ParseSchedule), and a schedule without such a
// text (a function, a value of an unknown type) is refused.

// Schedule is when a recurring registration recurs: Next returns the first
// occurrence after t, or the zero time if there is none (the series ends).
// It is the core's delayqueue.Schedule, whose method set robfig/cron/v3's
// Schedule shares.
//
// Register accepts the Schedules that can be stored as text (ScheduleText):
// an Interval (Every, EveryPhase), a CronSchedule (Cron, CronIn,
// ParseSchedule), and robfig/cron/v3's *cron.SpecSchedule and
// cron.ConstantDelaySchedule values whose location can be stored.
type Schedule = delayqueue.Schedule

// Interval is the core's delayqueue.Interval: a Schedule of fixed period
// in absolute time, its occurrences at Unix epoch + Phase + k*Period for
// every integer k. So Every(time.Hour) recurs on the hour and
// EveryPhase(24*time.Hour, 9*time.Hour) at 09:00 UTC each day, in every
// process alike; time zones and daylight saving time do not apply (9:00
// Paris time is a cron schedule). Register needs Period and Phase to be
// whole milliseconds, as Redis due times are; an Interval whose Period is
// not positive has no occurrences.
type Interval = delayqueue.Interval

// Every returns the Interval of period d and phase 0: occurrences at the
// multiples of d since the Unix epoch (1970-01-01 00:00 UTC), as
// delayqueue.Every. It panics if d <= 0.
func Every(d time.Duration) Interval { return EveryPhase(d, 0) }

// EveryPhase returns the Interval of period d shifted by phase, as
// delayqueue.EveryPhase: occurrences at phase plus the multiples of d since
// the Unix epoch; only the phase's remainder modulo d matters. It panics if
// d <= 0.
func EveryPhase(d, phase time.Duration) Interval {
	if d <= 0 {
		panic(fmt.Sprintf("redisq: Every with a non-positive period %v", d))
	}
	return delayqueue.EveryPhase(d, phase)
}

// CronSchedule is a cron schedule parsed by github.com/robfig/cron/v3 in a
// named time zone, with its canonical text: "CRON_TZ=zone fields". Make
// one with Cron, CronIn or ParseSchedule; the zero CronSchedule has no
// occurrences and cannot be registered.
type CronSchedule struct {
	text  string
	sched cron.Schedule
}

// Next returns the first occurrence after t as robfig/cron/v3 computes it
// (to the second, in the schedule's zone; see Cron for daylight saving
// time), or the zero time if there is none within five years or cs is the
// zero CronSchedule.
func (cs CronSchedule) Next(t time.Time) time.Time {
	if cs.sched == nil {
		return time.Time{}
	}
	return cs.sched.Next(t)
}

// String returns the canonical text, such as "CRON_TZ=Europe/Paris 0 9 * *
// *": what Register stores and ParseSchedule reads back.
func (cs CronSchedule) String() string { return cs.text }

// cronParser is robfig/cron/v3's standard parser (minute, hour, day of
// month, month, day of week, and descriptors such as @daily) with an
// optional seconds field first.
var cronParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Cron parses a cron spec as robfig/cron/v3 does: five fields (minute,
// hour, day of month, month, day of week) or six with seconds first, or a
// descriptor (@yearly, @monthly, @weekly, @daily, @hourly, @every
// duration), optionally after a time zone prefix, CRON_TZ=zone or TZ=zone
// (an IANA name, such as Europe/Paris). Without a prefix the spec is in
// UTC, not in the process's local zone, which other processes need not
// share. "Local" is refused for the same reason. Every process needs the
// zone in its time zone database (a program can embed one by importing
// time/tzdata).
//
// Daylight saving time is as robfig/cron/v3 computes it: an occurrence in
// the hour skipped in spring does not happen that day ("30 2 * * *" in
// Europe/Paris has none on 2026-03-29), and one in the hour repeated in
// autumn happens twice (02:30 CEST and 02:30 CET on 2026-10-25).
// "@every d" recurs d after each occurrence, d being whole seconds.
//
// It returns an error, prefixed "redisq:" and quoting spec, for a spec
// robfig/cron/v3 refuses, an unknown or unstorable zone, or an @every
// duration that is not a whole number of seconds of at least 1s (which
// robfig would round).
func Cron(spec string) (CronSchedule, error) { return parseCron(spec, nil) }

// CronIn is Cron for a spec without a zone prefix, in the zone loc. loc
// must be a zone loaded by name (time.LoadLocation, or time.UTC): it is
// stored by its name, so time.Local and time.FixedZone values whose name
// does not load to the same zone are refused with an error. It panics if
// loc is nil.
func CronIn(spec string, loc *time.Location) (CronSchedule, error) {
	if loc == nil {
		panic("redisq: CronIn with a nil location")
	}
	return parseCron(spec, loc)
}

// parseCron is Cron (loc nil) and CronIn.
func parseCron(spec string, loc *time.Location) (CronSchedule, error) {
	s := strings.TrimSpace(spec)
	zone, rest := "", s
	if strings.HasPrefix(s, "TZ=") || strings.HasPrefix(s, "CRON_TZ=") {
		if loc != nil {
			return CronSchedule{}, fmt.Errorf("redisq: cron spec %q has a zone prefix and CronIn a location: give one of them", spec)
		}
		i := strings.IndexFunc(s, unicode.IsSpace)
		if i < 0 {
			return CronSchedule{}, fmt.Errorf("redisq: cron spec %q: a zone prefix and no schedule", spec)
		}
		zone, rest = s[strings.IndexByte(s, '=')+1:i], strings.TrimSpace(s[i:])
		if zone == "" {
			zone = "UTC" // as time.LoadLocation has it
		}
	}
	switch {
	case loc != nil:
		z, err := zoneName(loc)
		if err != nil {
			return CronSchedule{}, fmt.Errorf("redisq: cron spec %q: %w", spec, err)
		}
		zone = z
	case zone == "":
		zone = "UTC"
	case zone == "Local":
		return CronSchedule{}, fmt.Errorf("redisq: cron spec %q: the zone Local is each process's own: name the zone (CRON_TZ=Europe/Paris)", spec)
	default:
		if _, err := time.LoadLocation(zone); err != nil {
			return CronSchedule{}, fmt.Errorf("redisq: cron spec %q: %w", spec, err)
		}
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return CronSchedule{}, fmt.Errorf("redisq: cron spec %q: no schedule", spec)
	}
	if fields[0] == "@every" {
		if len(fields) != 2 {
			return CronSchedule{}, fmt.Errorf("redisq: cron spec %q: @every takes one duration", spec)
		}
		d, err := time.ParseDuration(fields[1])
		if err != nil {
			return CronSchedule{}, fmt.Errorf("redisq: cron spec %q: %w", spec, err)
		}
		if d < time.Second || d%time.Second != 0 {
			return CronSchedule{}, fmt.Errorf("redisq: cron spec %q: robfig/cron runs @every to the second, at least 1s: give a whole number of seconds", spec)
		}
		fields[1] = d.String()
	}
	return cronFromText("CRON_TZ="+zone+" "+strings.Join(fields, " "), spec)
}

// cronFromText parses a canonical cron text; errors quote spec, the text
// the caller gave (the canonical one has a zone prefix it never wrote).
// robfig/cron/v3 panics on some input (a zone prefix with nothing after
// it): that is an error here.
func cronFromText(text, spec string) (cs CronSchedule, err error) {
	defer func() {
		if r := recover(); r != nil {
			cs, err = CronSchedule{}, fmt.Errorf("redisq: cron spec %q: robfig/cron panicked: %v", spec, r)
		}
	}()
	s, err := cronParser.Parse(text)
	if err != nil {
		return CronSchedule{}, fmt.Errorf("redisq: cron spec %q: %w", spec, err)
	}
	return CronSchedule{text: text, sched: s}, nil
}

// zoneName returns the name by which loc is stored: one that
// time.LoadLocation loads to a zone with loc's offsets (checked monthly
// from 2000 to 2040), and not Local.
func zoneName(loc *time.Location) (string, error) {
	name := loc.String()
	if loc == time.Local || name == "Local" {
		return "", errors.New("time.Local is each process's own zone and cannot be stored: load the zone by name (time.LoadLocation(\"Europe/Paris\"))")
	}
	l, err := time.LoadLocation(name)
	if err != nil {
		return "", fmt.Errorf("location %q cannot be stored: it has no name that loads (%v); load the zone by name", name, err)
	}
	for y := 2000; y <= 2040; y++ {
		for m := time.January; m <= time.December; m++ {
			t := time.Date(y, m, 15, 12, 0, 0, 0, time.UTC)
			_, o1 := t.In(loc).Zone()
			_, o2 := t.In(l).Zone()
			if o1 != o2 {
				return "", fmt.Errorf("location %q cannot be stored: the zone of that name has other offsets (%v: %d s, not %d s)", name, t.Format("2006-01"), o2, o1)
			}
		}
	}
	return name, nil
}

// ParseSchedule parses the text of a schedule: "every 1h0m0s" or "every
// 24h0m0s, phase 9h0m0s" (Go durations, as Interval.String writes them)
// for an Interval, any of them followed by "; jitter 5m0s" for a Jittered,
// anything else as a cron spec (Cron). It reads back what
// ScheduleText writes, and is what every keeper uses to compute a
// registration's occurrences. It returns a "redisq:" error quoting text
// for a text it cannot parse or that could not be registered (an Interval
// that is not whole milliseconds).
func ParseSchedule(text string) (Schedule, error) {
	if s, ok, err := parseJittered(text); ok {
		return s, err
	}
	t := strings.TrimSpace(text)
	if rest, ok := strings.CutPrefix(t, "every "); ok {
		p, ph, hasPhase := strings.Cut(rest, ",")
		iv := Interval{}
		var err error
		if iv.Period, err = time.ParseDuration(strings.TrimSpace(p)); err != nil {
			return nil, fmt.Errorf("redisq: schedule %q: %w", text, err)
		}
		if hasPhase {
			d, ok := strings.CutPrefix(strings.TrimSpace(ph), "phase ")
			if !ok {
				return nil, fmt.Errorf("redisq: schedule %q: expected \"every PERIOD, phase PHASE\"", text)
			}
			if iv.Phase, err = time.ParseDuration(strings.TrimSpace(d)); err != nil {
				return nil, fmt.Errorf("redisq: schedule %q: %w", text, err)
			}
		}
		if err := checkInterval(iv); err != nil {
			return nil, fmt.Errorf("redisq: schedule %q: %w", text, err)
		}
		return iv, nil
	}
	cs, err := Cron(t)
	if err != nil {
		return nil, err
	}
	return cs, nil
}

// checkInterval returns why iv cannot be registered, or nil.
func checkInterval(iv Interval) error {
	switch {
	case iv.Period <= 0:
		return fmt.Errorf("the period %v is not positive", iv.Period)
	case iv.Period%time.Millisecond != 0:
		return fmt.Errorf("the period %v is not a whole number of milliseconds (Redis due times are)", iv.Period)
	case iv.Phase%time.Millisecond != 0:
		return fmt.Errorf("the phase %v is not a whole number of milliseconds (Redis due times are)", iv.Phase)
	}
	return nil
}

// ScheduleText returns the canonical text of s, which Register stores and
// ParseSchedule reads back into a Schedule with the same occurrences:
//
//   - an Interval: "every 1h0m0s" or "every 24h0m0s, phase 9h0m0s", the
//     phase reduced modulo the period; the period must be positive and it
//     and the phase whole milliseconds;
//   - a CronSchedule: its text;
//   - a *cron.SpecSchedule of robfig/cron/v3: "CRON_TZ=zone" and its six
//     fields, seconds first, as lists of values ("0 0 9 * * 1-5"); its
//     location must be stored by name (see CronIn: not time.Local, which is
//     what cron.ParseStandard gives a spec without a zone prefix);
//   - a cron.ConstantDelaySchedule: "CRON_TZ=UTC @every d", d whole seconds;
//   - a Jittered: its schedule's text, "; jitter " and its Max.
//
// Any other Schedule (a function, a type of your own) gets an error
// naming what is accepted: occurrences are computed by every process that
// keeps the registration, from the stored text.
func ScheduleText(s Schedule) (string, error) {
	switch v := s.(type) {
	case nil:
		return "", errors.New("redisq: nil Schedule")
	case Interval:
		if err := checkInterval(v); err != nil {
			return "", fmt.Errorf("redisq: %v cannot be registered: %w", v, err)
		}
		phase := v.Phase % v.Period // the phase modulo the period, in [0, Period)
		if phase < 0 {
			phase += v.Period
		}
		return Interval{Period: v.Period, Phase: phase}.String(), nil
	case Jittered:
		return jitteredText(v)
	case CronSchedule:
		if v.sched == nil {
			return "", errors.New("redisq: the zero CronSchedule cannot be registered: make one with Cron or CronIn")
		}
		return v.text, nil
	case *cron.SpecSchedule:
		return specScheduleText(v)
	case cron.ConstantDelaySchedule:
		if v.Delay < time.Second || v.Delay%time.Second != 0 {
			return "", fmt.Errorf("redisq: cron.ConstantDelaySchedule of %v cannot be registered: robfig/cron runs it to the second, at least 1s", v.Delay)
		}
		return "CRON_TZ=UTC @every " + v.Delay.String(), nil
	}
	return "", fmt.Errorf("redisq: a schedule of type %T cannot be stored in Redis for every process to compute it: "+
		"use redisq.Every, EveryPhase, Cron, CronIn or ParseSchedule (or a robfig/cron/v3 schedule with a named zone)", s)
}

// cronField is the range of a field of a *cron.SpecSchedule.
type cronField struct {
	name   string
	lo, hi uint
}

var cronFields = [6]cronField{{"second", 0, 59}, {"minute", 0, 59}, {"hour", 0, 23}, {"day of month", 1, 31}, {"month", 1, 12}, {"day of week", 0, 6}}

// cronStar is robfig/cron's mark of a field given as "*" or "?", which
// makes day of month and day of week combine by AND instead of OR.
const cronStar = 1 << 63

// specScheduleText writes s's fields as value lists and checks that they
// parse back to s.
func specScheduleText(s *cron.SpecSchedule) (string, error) {
	if s == nil {
		return "", errors.New("redisq: nil *cron.SpecSchedule")
	}
	if s.Location == nil {
		return "", errors.New("redisq: a *cron.SpecSchedule without a location cannot be registered")
	}
	zone, err := zoneName(s.Location)
	if err != nil {
		return "", fmt.Errorf("redisq: cron schedule: %w; or give the zone in the spec: CRON_TZ=Europe/Paris 0 9 * * *", err)
	}
	bitsOf := [6]uint64{s.Second, s.Minute, s.Hour, s.Dom, s.Month, s.Dow}
	parts := make([]string, 0, 7)
	parts = append(parts, "CRON_TZ="+zone)
	for i, f := range cronFields {
		t, err := cronFieldText(bitsOf[i], f)
		if err != nil {
			return "", fmt.Errorf("redisq: cron schedule cannot be registered: %w", err)
		}
		parts = append(parts, t)
	}
	text := strings.Join(parts, " ")
	cs, err := cronFromText(text, text)
	if err != nil {
		return "", err
	}
	back, ok := cs.sched.(*cron.SpecSchedule)
	if !ok || back.Second != s.Second || back.Minute != s.Minute || back.Hour != s.Hour ||
		back.Dom != s.Dom || back.Month != s.Month || back.Dow != s.Dow {
		return "", fmt.Errorf("redisq: cron schedule cannot be registered: %q does not parse back to it", text)
	}
	return text, nil
}

// cronFieldText writes one field: "*" for robfig's star, else the values
// as a list of runs ("1-5,7").
func cronFieldText(b uint64, f cronField) (string, error) {
	var mask uint64
	for v := f.lo; v <= f.hi; v++ {
		mask |= 1 << v
	}
	if b&^(mask|cronStar) != 0 {
		return "", fmt.Errorf("its %s field has values out of %d-%d", f.name, f.lo, f.hi)
	}
	if b&cronStar != 0 {
		if b&mask != mask {
			return "", fmt.Errorf("its %s field is marked * but does not hold every value", f.name)
		}
		return "*", nil
	}
	if b == 0 {
		return "", fmt.Errorf("its %s field holds no value", f.name)
	}
	var runs []string
	for v := f.lo; v <= f.hi; v++ {
		if b&(1<<v) == 0 {
			continue
		}
		w := v
		for w < f.hi && b&(1<<(w+1)) != 0 {
			w++
		}
		if w == v {
			runs = append(runs, fmt.Sprint(v))
		} else {
			runs = append(runs, fmt.Sprintf("%d-%d", v, w))
		}
		v = w
	}
	return strings.Join(runs, ","), nil
}
