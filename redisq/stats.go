package redisq

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// StatsCounters are a queue's event counters since it was created (or last
// destroyed), kept in Redis by the scripts, so every process contributes to
// the same figures. Each is zero until its event first happens. With no call
// in progress, Enqueued == Acked + Cancelled + Deleted + Scheduled +
// InFlight + Dead (Stats' state counts).
type StatsCounters struct {
	Enqueued     int64 `json:"enqueued"`      // new items (Enqueue, EnqueueAfter, Schedule creating one)
	Delivered    int64 `json:"delivered"`     // leases granted by Take/TakeBatch (redeliveries included)
	Acked        int64 `json:"acked"`         // items acked (gone)
	Nacked       int64 `json:"nacked"`        // leases given back by Nack (retried, dead-lettered or dropped)
	Expired      int64 `json:"expired"`       // leases that timed out and were retried
	DeadLettered int64 `json:"dead_lettered"` // items moved to the dead set (max attempts or DeadLetter)
	Cancelled    int64 `json:"cancelled"`     // items removed by Cancel, or dropped after Cancel marked them in flight
	Rescheduled  int64 `json:"rescheduled"`   // Reschedule calls that moved an item, Schedule replacing one
	Requeued     int64 `json:"requeued"`      // dead items revived by RequeueDead/RequeueAllDead
	Deleted      int64 `json:"deleted"`       // items removed by DeleteDead, DeleteAllDead and Purge
}

// counterFields maps the stats hash's field names to StatsCounters fields.
var counterFields = []struct {
	name string
	get  func(*StatsCounters) *int64
}{
	{"enqueued", func(c *StatsCounters) *int64 { return &c.Enqueued }},
	{"delivered", func(c *StatsCounters) *int64 { return &c.Delivered }},
	{"acked", func(c *StatsCounters) *int64 { return &c.Acked }},
	{"nacked", func(c *StatsCounters) *int64 { return &c.Nacked }},
	{"expired", func(c *StatsCounters) *int64 { return &c.Expired }},
	{"dead", func(c *StatsCounters) *int64 { return &c.DeadLettered }},
	{"cancelled", func(c *StatsCounters) *int64 { return &c.Cancelled }},
	{"rescheduled", func(c *StatsCounters) *int64 { return &c.Rescheduled }},
	{"requeued", func(c *StatsCounters) *int64 { return &c.Requeued }},
	{"deleted", func(c *StatsCounters) *int64 { return &c.Deleted }},
}

func countersFrom(m map[string]int64) StatsCounters {
	var c StatsCounters
	for _, f := range counterFields {
		*f.get(&c) = m[f.name]
	}
	return c
}

// latenessBoundsMS are the inclusive upper bounds, in milliseconds, of the
// lateness histogram's buckets; a last bucket holds everything later. Redis
// TIME is read to the millisecond, so 0 means "on time to the millisecond".
// The histogram is a hash with one field per bucket (the bound, or "inf")
// plus "sum": a fixed, small size whatever the traffic.
var latenessBoundsMS = []int64{0, 1, 2, 5, 10, 25, 50, 100, 250, 500,
	1000, 2500, 5000, 10000, 30000, 60000, 300000, 3600000}

// latenessCapMS caps the lateness one delivery adds to the sum (about 2,850
// years, later than any item due after year 1 can be), so one claim's sum of
// at most scriptBatch deliveries stays an integer a Lua number holds exactly.
const latenessCapMS = (1<<53 - 1) / scriptBatch

// luaLateness defines record_lateness(due, k, now): it adds the deliveries
// of one claim (the first k members of due, a WITHSCORES reply) to the
// histogram in K_LATE, with one HINCRBY per bucket touched and one for a
// non-zero sum. O(k·buckets) in Lua.
//
// It cannot fail, so a claim never errors after leasing: each lateness is
// capped at latenessCapMS, numbers go to Redis formatted "%d" (never
// "1e+17"), and the sum saturates at the int64 maximum instead of failing
// HINCRBY with an overflow (redis.pcall; no extra command unless it
// overflows).
var luaLateness = func() string {
	b := make([]string, len(latenessBoundsMS))
	for i, v := range latenessBoundsMS {
		b[i] = strconv.FormatInt(v, 10)
	}
	return `
local late_bounds = {` + strings.Join(b, ", ") + `}
local function record_lateness(due, k, now)
  local counts, sum = {}, 0
  for i = 2, 2 * k, 2 do
    local l = now - tonumber(due[i])
    if l < 0 then l = 0 end
    if l > ` + strconv.FormatInt(latenessCapMS, 10) + ` then l = ` + strconv.FormatInt(latenessCapMS, 10) + ` end
    sum = sum + l
    local b = #late_bounds + 1
    for j = 1, #late_bounds do
      if l <= late_bounds[j] then b = j; break end
    end
    counts[b] = (counts[b] or 0) + 1
  end
  for j = 1, #late_bounds + 1 do
    if counts[j] then
      local f = 'inf'
      if j <= #late_bounds then f = string.format('%d', late_bounds[j]) end
      redis.call('HINCRBY', K_LATE, f, string.format('%d', counts[j]))
    end
  end
  if sum > 0 then
    local r = redis.pcall('HINCRBY', K_LATE, 'sum', string.format('%d', sum))
    if type(r) == 'table' and r.err then redis.call('HSET', K_LATE, 'sum', '` + strconv.FormatInt(math.MaxInt64, 10) + `') end
  end
end
`
}()

// Lateness is a histogram of how late deliveries were: Redis TIME when the
// claim script leased an item minus the item's due time, both in
// milliseconds. It is kept in Redis (fixed size) by every consumer's claims.
type Lateness struct {
	// Bounds are the inclusive upper bounds of the buckets, ascending.
	Bounds []time.Duration
	// Counts[i] counts deliveries with lateness <= Bounds[i] and above
	// Bounds[i-1]; Counts[len(Bounds)] counts those above the last bound.
	// Not cumulative.
	Counts []int64
	// Sum is the total lateness of all counted deliveries, saturated at
	// the Duration maximum (about 292 years). Redis keeps it in
	// milliseconds, each delivery counting at most about 2,850 years, and
	// saturated at the int64 maximum.
	Sum time.Duration
}

// LatenessBounds returns the bucket bounds of the lateness histogram.
func LatenessBounds() []time.Duration {
	b := make([]time.Duration, len(latenessBoundsMS))
	for i, v := range latenessBoundsMS {
		b[i] = time.Duration(v) * time.Millisecond
	}
	return b
}

func latenessFrom(flat []interface{}) Lateness {
	l := Lateness{Bounds: LatenessBounds(), Counts: make([]int64, len(latenessBoundsMS)+1)}
	idx := make(map[string]int, len(latenessBoundsMS)+1)
	for i, v := range latenessBoundsMS {
		idx[strconv.FormatInt(v, 10)] = i
	}
	idx["inf"] = len(latenessBoundsMS)
	for i := 0; i+1 < len(flat); i += 2 {
		k, _ := flat[i].(string)
		v := toInt(flat[i+1])
		if k == "sum" {
			l.Sum = msDuration(v)
		} else if j, ok := idx[k]; ok {
			l.Counts[j] = v
		}
	}
	return l
}

// Count returns the number of deliveries in the histogram.
func (l Lateness) Count() int64 {
	var n int64
	for _, c := range l.Counts {
		n += c
	}
	return n
}

// Quantile returns an upper bound for the q-quantile (0 <= q <= 1) of
// lateness: the bound of the bucket that holds it. It returns 0 for an empty
// histogram, and -1 when the quantile lies in the last, unbounded bucket.
func (l Lateness) Quantile(q float64) time.Duration {
	n := l.Count()
	if n == 0 {
		return 0
	}
	rank := int64(q*float64(n) + 0.5)
	rank = min(max(rank, 1), n)
	var seen int64
	for i, c := range l.Counts {
		seen += c
		if seen >= rank {
			if i < len(l.Bounds) {
				return l.Bounds[i]
			}
			break
		}
	}
	return -1
}
