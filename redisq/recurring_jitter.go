package redisq

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"time"
)

// MaxJitter is the longest Jittered.Max.
const MaxJitter = 24 * time.Hour

// Jittered is a Schedule whose occurrences are Schedule's, each delivered
// up to Max after it: the item of a registration's occurrence at t is due
// at t + offset, where offset, in [0, Max) whole milliseconds, is computed
// from the registration's name and t alone (FNV-1a), so that every
// process computes the same one. It spreads registrations that share a
// schedule (every tenant's digest at 09:00) over Max without coordination,
// and keeps each occurrence exactly once: the occurrence, its item id
// (OccurrenceID, with t) and the registration's watermark are t's; only
// the item's due time moves. Next returns Schedule's occurrences.
//
// Its text is Schedule's followed by "; jitter " and Max ("every 1h0m0s;
// jitter 5m0s"); Max must be positive, whole milliseconds and at most
// MaxJitter, and Schedule one that Register accepts (not Jittered).
type Jittered struct {
	Schedule Schedule
	Max      time.Duration
}

// Jitter returns s with each occurrence delivered up to max after it, by
// an offset fixed per registration and occurrence (see Jittered).
func Jitter(s Schedule, max time.Duration) Jittered { return Jittered{Schedule: s, Max: max} }

// Next returns the first occurrence of j.Schedule after t.
func (j Jittered) Next(t time.Time) time.Time {
	if j.Schedule == nil {
		return time.Time{}
	}
	return j.Schedule.Next(t)
}

// String returns j's text (see ScheduleText), or what is wrong with it.
func (j Jittered) String() string {
	s, err := ScheduleText(j)
	if err != nil {
		return err.Error()
	}
	return s
}

const jitterSep = "; jitter "

// jitteredText is ScheduleText of a Jittered.
func jitteredText(j Jittered) (string, error) {
	if _, nested := j.Schedule.(Jittered); nested {
		return "", fmt.Errorf("redisq: a Jittered schedule of a Jittered one cannot be registered")
	}
	if err := checkJitter(j.Max); err != nil {
		return "", fmt.Errorf("redisq: Jitter(%v) cannot be registered: %w", j.Max, err)
	}
	inner, err := ScheduleText(j.Schedule)
	if err != nil {
		return "", err
	}
	return inner + jitterSep + j.Max.String(), nil
}

// parseJittered reads the text of a Jittered (ok false: text is not one).
func parseJittered(text string) (s Schedule, ok bool, err error) {
	inner, d, ok := strings.Cut(text, jitterSep)
	if !ok {
		return nil, false, nil
	}
	max, err := time.ParseDuration(strings.TrimSpace(d))
	if err != nil {
		return nil, true, fmt.Errorf("redisq: schedule %q: %w", text, err)
	}
	if err := checkJitter(max); err != nil {
		return nil, true, fmt.Errorf("redisq: schedule %q: %w", text, err)
	}
	in, err := ParseSchedule(inner)
	if err != nil {
		return nil, true, err
	}
	return Jittered{Schedule: in, Max: max}, true, nil
}

func checkJitter(max time.Duration) error {
	switch {
	case max <= 0 || max > MaxJitter:
		return fmt.Errorf("the jitter %v is not in (0, %v]", max, MaxJitter)
	case max%time.Millisecond != 0:
		return fmt.Errorf("the jitter %v is not a whole number of milliseconds (Redis due times are)", max)
	}
	return nil
}

// occurrenceDue is when the item of registration name's occurrence at occ
// (ms) is due: occ, plus its offset when s is Jittered.
func occurrenceDue(s Schedule, name string, occ int64) int64 {
	j, ok := s.(Jittered)
	if !ok {
		return occ
	}
	h := fnv.New64a()
	h.Write([]byte(name))
	h.Write([]byte{'@'})
	h.Write(strconv.AppendInt(nil, occ, 10))
	return occ + int64(h.Sum64()%uint64(j.Max.Milliseconds()))
}
