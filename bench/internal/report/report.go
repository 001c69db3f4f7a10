// Package report is what dqbench and dqbench-redis write: the results
// (Report, which -json writes and scripts/perfchart reads), their text or
// markdown tables, and the flags, progress lines and CPU readings both
// commands share.
package report

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"
)

// Report is what -json writes; scripts/perfchart reads it.
type Report struct {
	Meta    Meta     `json:"meta"`
	Results []Result `json:"results"`
	// Capacity is dqbench-redis -impl partitioned's measurement.
	Capacity *CapacityReport `json:"capacity,omitempty"`
}

// Meta describes the machine and the workload.
type Meta struct {
	Title      string  `json:"title"`
	Time       string  `json:"time"`
	GoVersion  string  `json:"go_version"`
	GOOS       string  `json:"goos"`
	GOARCH     string  `json:"goarch"`
	NumCPU     int     `json:"num_cpu"`
	GOMAXPROCS int     `json:"gomaxprocs"`
	Args       string  `json:"args"`
	Mode       string  `json:"mode"`
	Items      int     `json:"items"`
	WindowNs   int64   `json:"window_ns"`
	LeadNs     int64   `json:"lead_ns"`
	Producers  int     `json:"producers"`
	Consumers  int     `json:"consumers"`
	Batch      int     `json:"batch"`
	Payload    int     `json:"payload"`
	Rate       float64 `json:"rate"`
	DelayNs    int64   `json:"delay_ns"`
	DurationNs int64   `json:"duration_ns"`
	FloorNs    int64   `json:"floor_delay_ns"`
	Timer      string  `json:"timer"`
	LoadAvg    string  `json:"loadavg,omitempty"` // /proc/loadavg 1/5/15 min at the end of the run (Linux)
	Redis      string  `json:"redis,omitempty"`   // -impl redis: server version, address, AOF settings
}

// Result is one implementation's (or floor's, or idle run's) measurement.
type Result struct {
	Name         string       `json:"name"`
	Kind         string       `json:"kind"` // queue, floor, idle
	Mode         string       `json:"mode"`
	Items        int          `json:"items"`
	Delivered    int          `json:"delivered"`
	Early        int          `json:"early"`
	Duplicates   int          `json:"duplicates"`
	OfferSeconds float64      `json:"offer_seconds"`
	OfferRate    float64      `json:"offers_per_second"`
	DeliverRate  float64      `json:"deliveries_per_second"`
	CPUSeconds   float64      `json:"cpu_seconds"`
	CPUPerItemNs float64      `json:"cpu_ns_per_item"`
	HeapPerItem  float64      `json:"heap_bytes_per_item"` // -1: not measured
	IdleSeconds  float64      `json:"idle_seconds,omitempty"`
	Wakeups      uint64       `json:"wakeups"`
	Lateness     *Percentiles `json:"lateness_ns,omitempty"`
	// StatsLateness: the queue's own figures (delayqueue's Stats.Lateness).
	StatsLateness *Percentiles `json:"stats_lateness_ns,omitempty"`
	Histogram     []Bucket     `json:"histogram,omitempty"`
	RedisIdle     *RedisIdle   `json:"redis_idle,omitempty"` // -impl redis idle phase
	// -impl redis/asynq: the whole Redis server's commands (scripts' own
	// calls included) and CPU over the measured phase (-1: unknown), per
	// item; for an idle phase, commands per 10 s.
	ServerCmds         int64   `json:"server_cmds,omitempty"`
	ServerCPUNs        int64   `json:"server_cpu_ns,omitempty"`
	ServerCmdsPerItem  float64 `json:"server_cmds_per_item,omitempty"`
	ServerCPUPerItemNs float64 `json:"server_cpu_ns_per_item,omitempty"`
	IdleCmdsPer10s     float64 `json:"idle_cmds_per_10s,omitempty"`
	// -impl redis steady phases: the growth of the server's used_memory
	// (INFO memory) over the phase, in all and per delivered item, and the
	// items the queue keeps completed at its end (Job.Retention).
	ServerMemBytes   int64   `json:"server_mem_bytes,omitempty"`
	ServerMemPerItem float64 `json:"server_mem_bytes_per_item,omitempty"`
	Kept             int     `json:"kept,omitempty"`
	// KeptBytesPerItem is the used_memory that purging the kept items
	// freed, per kept item.
	KeptBytesPerItem float64 `json:"kept_bytes_per_item,omitempty"`
	// dqbench-redis -mode limits: the row's limit (described), its rate
	// limit's N per second (0: none), the starts per second after the
	// first second, the most starts in any second, the items that waited
	// for a rate slot or a place (asynq: tasks retried at least once),
	// handler calls per handled item, and the most items of one limit key
	// held at once by the handlers.
	Limit        string  `json:"limit,omitempty"`
	Round        int     `json:"round,omitempty"` // -rounds: the row's round, from 1
	LimitN       int     `json:"limit_n,omitempty"`
	StartRate    float64 `json:"starts_per_second,omitempty"`
	MaxPerWindow int     `json:"max_starts_per_second,omitempty"`
	Waited       int     `json:"waited,omitempty"`
	Attempts     float64 `json:"calls_per_item,omitempty"`
	MaxPerKey    int     `json:"max_held_per_key,omitempty"`
	Note         string  `json:"note,omitempty"`
}

// Percentiles of lateness, in nanoseconds.
type Percentiles struct {
	N    int   `json:"n"`
	Mean int64 `json:"mean"`
	P50  int64 `json:"p50"`
	P90  int64 `json:"p90"`
	P99  int64 `json:"p99"`
	P999 int64 `json:"p999"`
	Max  int64 `json:"max"`
}

// Bucket counts lateness samples in [Lo, Hi) nanoseconds.
type Bucket struct {
	Lo    int64 `json:"lo"`
	Hi    int64 `json:"hi"`
	Count int   `json:"count"`
}

// RedisIdle is what the consumers of dqbench-redis's idle phase sent
// (Result.RedisIdle).
type RedisIdle struct {
	WakeCapNs int64 `json:"wake_cap_ns"`
	// Per consumer, over the measured idle time: blocking waits sent
	// (BZPOPMIN), claim scripts (EVALSHA/EVAL) and anything else.
	BZPopMin []int64 `json:"bzpopmin"`
	Claims   []int64 `json:"claims"`
	Other    []int64 `json:"other"`
	// MeanWaitNs is the mean time one BZPOPMIN blocked (those that ended
	// within the measured time).
	MeanWaitNs int64 `json:"mean_wait_ns"`
	// Server-wide INFO commandstats deltas over the same time (-1: not
	// available); equal to the sums above on a server nobody else uses.
	ServerBZPopMin int64 `json:"server_bzpopmin"`
	ServerEval     int64 `json:"server_evalsha"`
	Pass           bool  `json:"pass"`
}

// CapacityReport is dqbench-redis -impl partitioned's result
// (Report.Capacity).
type CapacityReport struct {
	Cluster    string           `json:"cluster"` // how it was obtained: local (started by dqbench-redis) or given
	Masters    []CapacityMaster `json:"masters"` // in slot order: m1, m2, ...
	Partitions int              `json:"partitions"`
	Items      int              `json:"items"` // per queue and run
	Rounds     int              `json:"rounds"`
	Loops      []CapacityLoop   `json:"loops"`
}

// CapacityMaster is one master of the cluster.
type CapacityMaster struct {
	Name  string `json:"name"` // m1, m2, ... in the tables
	Addr  string `json:"addr"`
	Slots string `json:"slots"` // e.g. "0-5460"
}

// CapacityLoop is one consumer loop's measurements.
type CapacityLoop struct {
	Name      string        `json:"name"`  // e.g. "AckTake"
	Batch     int           `json:"batch"` // 0: AckTake, else TakeBatch(Batch)+AckMany
	Consumers int           `json:"consumers"`
	Configs   []CapacityRun `json:"configs"` // ordinary queue, 1 partition, M partitions, 1 partition under equal load
}

// CapacityRun is one configuration's median round.
type CapacityRun struct {
	Config string `json:"config"`
	Queues int    `json:"queues"` // delivered at the same time (equal load: one per master)
	Items  int    `json:"items"`  // per queue
	WallNs int64  `json:"wall_ns"`
	// Per master, in CapacityReport.Masters' order: main-thread CPU and
	// commands (INFO commandstats, scripts' own calls included, INFO
	// excluded) per item; under equal load, per item of the queue on that
	// master.
	CPUPerItemNs []float64 `json:"cpu_ns_per_item"`
	CmdsPerItem  []float64 `json:"cmds_per_item"`
	BusiestNs    float64   `json:"busiest_cpu_ns_per_item"`
	// Every round's busiest master CPU per item, in round order.
	RoundsNs []float64 `json:"rounds_busiest_ns"`
}

// NewMeta describes this machine and the command line, with title; the
// command fills in its workload.
func NewMeta(title string) Meta {
	return Meta{
		Title:      title,
		Time:       time.Now().UTC().Format(time.RFC3339),
		GoVersion:  runtime.Version(),
		GOOS:       runtime.GOOS,
		GOARCH:     runtime.GOARCH,
		NumCPU:     runtime.NumCPU(),
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		Args:       strings.Join(os.Args[1:], " "),
	}
}

// TitleParts are the parts of a title that say how the consumers take
// (Take, or TakeBatch(batch) when batch > 1) and the payload (", N B
// payload", or "" for none).
func TitleParts(batch, payload int) (take, pay string) {
	take = fmt.Sprintf("TakeBatch(%d)", batch)
	if batch <= 1 {
		take = "Take"
	}
	if payload > 0 {
		pay = fmt.Sprintf(", %d B payload", max(8, payload))
	}
	return take, pay
}

// SetLateness fills the percentiles and histogram from lateness samples.
func (r *Result) SetLateness(lat []int64) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	q := func(p float64) int64 {
		i := int(p * float64(len(lat)-1))
		return lat[i]
	}
	var sum float64
	for _, l := range lat {
		sum += float64(l)
	}
	r.Lateness = &Percentiles{
		P50: q(0.50), P90: q(0.90), P99: q(0.99), P999: q(0.999),
		Max: lat[len(lat)-1], Mean: int64(sum / float64(len(lat))), N: len(lat),
	}
	r.Histogram = histogram(lat)
}

// histogramEdges are the upper bounds of the lateness buckets, 1-2-5 steps.
var histogramEdges = func() []int64 {
	var e []int64
	for d := int64(1000); d <= 10e9; d *= 10 {
		e = append(e, d, 2*d, 5*d)
	}
	return e
}()

// histogram counts sorted samples into buckets: (-inf, 0), [0, 1µs), ...
func histogram(sorted []int64) []Bucket {
	var out []Bucket
	i := 0
	take := func(upper int64) int {
		j := i
		for j < len(sorted) && sorted[j] < upper {
			j++
		}
		c := j - i
		i = j
		return c
	}
	if c := take(0); c > 0 {
		out = append(out, Bucket{Lo: -1 << 62, Hi: 0, Count: c})
	}
	lo := int64(0)
	for _, hi := range histogramEdges {
		out = append(out, Bucket{Lo: lo, Hi: hi, Count: take(hi)})
		lo = hi
	}
	if c := len(sorted) - i; c > 0 {
		out = append(out, Bucket{Lo: lo, Hi: 1 << 62, Count: c})
	}
	// Trim empty buckets at both ends.
	for len(out) > 0 && out[0].Count == 0 {
		out = out[1:]
	}
	for len(out) > 0 && out[len(out)-1].Count == 0 {
		out = out[:len(out)-1]
	}
	return out
}

// JoinNote joins two notes of a Result with "; " (either may be empty).
func JoinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
