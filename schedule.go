package delayqueue

import (
	"fmt"
	"math/bits"
	"time"
)

// Schedule is when a recurring key of a Keyed recurs (see
// Keyed.ScheduleRecurring): Next returns the first occurrence after t, or
// the zero time if there is none (the series ends).
//
// The method set is that of github.com/robfig/cron/v3's Schedule, so its
// values (cron.ParseStandard("CRON_TZ=Europe/Paris 0 9 * * *"), say) are
// Schedules as they are, and cron parsing stays out of this package. Every
// and EveryPhase give fixed periods; ScheduleFunc adapts a function.
//
// The queue calls Next with its lock held, on the goroutine handing out an
// occurrence, so Next must be quick and must not call the queue. A Next
// that panics, or returns a time not after t other than the zero time, is
// a programmer error: the series ends and the call handing out the
// occurrence panics (see Keyed.ScheduleRecurring).
type Schedule interface {
	Next(t time.Time) time.Time
}

// ScheduleFunc adapts a function to a Schedule.
type ScheduleFunc func(t time.Time) time.Time

// Next returns f(t).
func (f ScheduleFunc) Next(t time.Time) time.Time { return f(t) }

// Interval is a Schedule of fixed period in absolute time: its occurrences
// are the instants Unix epoch + Phase + k*Period for every integer k. So
// Every(time.Hour) recurs on the hour, Every(5*time.Minute) at :00, :05,
// :10..., and EveryPhase(24*time.Hour, 9*time.Hour) at 09:00 UTC each day,
// in every process and after every restart alike, whenever the series was
// started. Being in absolute time, an Interval ignores time zones and
// daylight saving time: "9:00 Paris time" is a cron schedule.
//
// An Interval is plain data (encoding/json writes and reads its fields). An
// Interval whose Period is not positive, such as the zero Interval, has no
// occurrences.
type Interval struct {
	Period time.Duration // the time between occurrences
	Phase  time.Duration // the offset of the occurrences from multiples of Period since the Unix epoch
}

// Every returns the Interval of period d and phase 0: occurrences at the
// multiples of d since the Unix epoch (1970-01-01 00:00 UTC), so on the
// hour for time.Hour and at midnight UTC for 24*time.Hour. It panics if
// d <= 0.
func Every(d time.Duration) Interval { return EveryPhase(d, 0) }

// EveryPhase returns the Interval of period d shifted by phase: occurrences
// at phase plus the multiples of d since the Unix epoch, so
// EveryPhase(time.Hour, 15*time.Minute) recurs at a quarter past each hour.
// The phase may be negative or longer than d; only its remainder modulo d
// matters. It panics if d <= 0.
func EveryPhase(d, phase time.Duration) Interval {
	if d <= 0 {
		panic(fmt.Sprintf("delayqueue: Every with a non-positive period %v", d))
	}
	return Interval{Period: d, Phase: phase}
}

// Next returns the first occurrence strictly after t, in t's location and
// with t's monotonic clock reading moved by the same amount, or the zero
// time if iv.Period <= 0. It is exact for every t that time.Time holds
// (it computes the remainder of t's Unix time modulo Period in 128 bits),
// and allocates nothing.
func (iv Interval) Next(t time.Time) time.Time {
	if iv.Period <= 0 {
		return time.Time{}
	}
	d := uint64(iv.Period)
	// r = (t - epoch - phase) mod d, in [0, d), from t = sec*1e9 + nsec.
	hi, lo := bits.Mul64(floorMod(t.Unix(), d), uint64(time.Second)%d)
	r := bits.Rem64(hi, lo, d)
	r = (r + uint64(t.Nanosecond())%d) % d // both < 2^63: no overflow
	r = (r + d - floorMod(int64(iv.Phase), d)) % d
	return t.Add(time.Duration(d - r))
}

// String describes the Interval, such as "every 1h0m0s" or "every
// 24h0m0s, phase 9h0m0s".
func (iv Interval) String() string {
	if iv.Phase == 0 {
		return fmt.Sprintf("every %v", iv.Period)
	}
	return fmt.Sprintf("every %v, phase %v", iv.Period, iv.Phase)
}

// floorMod returns x modulo d in [0, d), for d > 0.
func floorMod(x int64, d uint64) uint64 {
	if x >= 0 {
		return uint64(x) % d
	}
	// -(x+1) does not overflow for math.MinInt64.
	return d - 1 - uint64(-(x+1))%d
}
