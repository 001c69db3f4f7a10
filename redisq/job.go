package redisq

import (
	"errors"
	"fmt"
	"maps"
	"time"
	"unicode/utf8"

	"github.com/dq-go/delayqueue/redisq/internal/rdb"
)

// Job is what an item carries beyond its id and payload: its kind, its
// headers, and the options that are its own rather than its queue's. It
// is set at enqueue by JobOptions (Enqueue, EnqueueAfter, Schedule,
// ScheduleAfter, EnqueueItem.Job, RegisterJob) and stored with the item,
// so that every process honours it; Message and Item carry it. The zero
// value sets nothing: the queue's options apply.
type Job struct {
	// Kind names what the item is ("refund", "digest"): a Mux routes on
	// it, and lists, metrics and the tools show it. At most MaxKindLen
	// bytes of UTF-8; "" is no kind.
	Kind string `json:"kind,omitempty"`
	// Headers are small string pairs carried from the producer to the
	// handler (a trace context, a tenant): at most MaxHeaderBytes in all.
	Headers map[string]string `json:"headers,omitempty"`
	// MaxAttempts replaces the queue's WithMaxAttempts for this item when
	// it is not 0 (0: the queue's, whose own 0 is DefaultMaxAttempts);
	// NoAttemptLimit (any negative value) is no limit.
	MaxAttempts int `json:"max_attempts,omitempty"`
	// BackoffBase and BackoffMax replace the queue's WithBackoff for this
	// item when BackoffBase is positive.
	BackoffBase time.Duration `json:"backoff_base,omitempty"`
	BackoffMax  time.Duration `json:"backoff_max,omitempty"`
	// Timeout bounds each run of a Worker's handler: its ctx ends Timeout
	// after the run starts (the lease is extended meanwhile as always).
	// 0 is no bound.
	Timeout time.Duration `json:"timeout,omitempty"`
	// NotAfter is when the item stops being worth running (the Redis
	// clock): a Worker that claims it later dead-letters it unrun, with
	// the reason ReasonNotAfter, and a handler's ctx ends then too. The
	// zero Time is no such time.
	NotAfter time.Time `json:"not_after,omitzero"`
	// Retention is how long the item is kept once acked, in the state
	// Completed, with the result its handler set (Message.SetResult); 0
	// deletes it at the ack.
	Retention time.Duration `json:"retention,omitempty"`
	// UniqueKey, with UniqueFor, makes the enqueue a uniqueness window
	// (see Unique): the item is stored only if no enqueue of the same key
	// in this queue was, by the Redis clock, less than UniqueFor ago,
	// whatever became of that item since (still waiting, run, completed,
	// dead or cancelled); otherwise the enqueue returns ErrUniqueHeld and
	// changes nothing. At most MaxUniqueKeyLen bytes, any bytes; "" is no
	// window.
	UniqueKey string        `json:"unique_key,omitempty"`
	UniqueFor time.Duration `json:"unique_for,omitempty"`
	// Debounce changes what an enqueue does while UniqueKey's window is
	// held (see Debounce): it replaces the item holding it if that item
	// still waits, instead of being refused.
	Debounce bool `json:"debounce,omitempty"`
	// LimitKey is the key whose rate and concurrency limits the item's
	// starts count against (see Queue.SetRateLimit and
	// Queue.SetConcurrencyLimit), for example a tenant or an API host; ""
	// counts against the queue's own (the limits of the key ""). At most
	// MaxLimitKeyLen bytes, any bytes.
	LimitKey string `json:"limit_key,omitempty"`
}

// MaxLimitKeyLen is the longest Job.LimitKey, in bytes.
const MaxLimitKeyLen = 1024

// MaxUniqueKeyLen is the longest Job.UniqueKey, in bytes.
const MaxUniqueKeyLen = 1024

// MaxUniqueFor is the longest Job.UniqueFor.
const MaxUniqueFor = 10 * 365 * 24 * time.Hour

// MaxKindLen is the longest Kind, in bytes.
const MaxKindLen = 256

// MaxHeaderBytes bounds a Job's Headers: the lengths of all names and
// values together.
const MaxHeaderBytes = 16 << 10

// ReasonNotAfter is the dead reason of an item a Worker claimed after its
// NotAfter time.
const ReasonNotAfter = "redisq: not run: past its NotAfter time"

// ErrJobTimeout is the cause (context.Cause) of the end of a handler's ctx
// at its Job's Timeout or NotAfter time; ctx.Err() is then
// context.DeadlineExceeded. A handler that returns it is retried as for
// any error, and an item past its NotAfter time is then dead-lettered
// unrun.
var ErrJobTimeout = errors.New("redisq: the job's timeout passed")

// JobOption sets one field of a Job, at enqueue.
type JobOption func(*Job)

// Kind sets the item's Job.Kind.
func Kind(kind string) JobOption { return func(j *Job) { j.Kind = kind } }

// Header sets one of the item's Job.Headers.
func Header(name, value string) JobOption {
	return func(j *Job) {
		if j.Headers == nil {
			j.Headers = make(map[string]string)
		}
		j.Headers[name] = value
	}
}

// MaxAttempts sets the item's Job.MaxAttempts: n deliveries at most, 0
// the queue's (WithMaxAttempts), NoAttemptLimit (n < 0) no limit. asynq's
// MaxRetry(n) is MaxAttempts(n + 1).
func MaxAttempts(n int) JobOption { return func(j *Job) { j.MaxAttempts = n } }

// Backoff sets the item's Job.BackoffBase and BackoffMax: the redelivery
// delay after the k-th failure is base·2^(k-1), at most max, as with
// WithBackoff.
func Backoff(base, max time.Duration) JobOption {
	return func(j *Job) { j.BackoffBase, j.BackoffMax = base, max }
}

// Timeout sets the item's Job.Timeout.
func Timeout(d time.Duration) JobOption { return func(j *Job) { j.Timeout = d } }

// NotAfter sets the item's Job.NotAfter.
func NotAfter(t time.Time) JobOption { return func(j *Job) { j.NotAfter = t } }

// Retention sets the item's Job.Retention.
func Retention(d time.Duration) JobOption { return func(j *Job) { j.Retention = d } }

// Unique makes the enqueue take key's uniqueness window in its queue for
// window (whole milliseconds, rounded up): "at most one job with this key
// in the next window, including after it completed", as asynq's Unique
// and BullMQ's deduplication ttl. The window is counted by the Redis clock
// from the enqueue that took it and is released only by time (or by
// Queue.ReleaseUnique), not by the item's run or deletion; an enqueue of
// the same key meanwhile returns ErrUniqueHeld. Unique applies to Enqueue,
// Add, EnqueueMany and JobKind's, of a Queue or a Partitioned (which
// keeps every item of the key in the key's partition); Schedule,
// ScheduleItem and recurring registrations refuse it.
func Unique(key string, window time.Duration) JobOption {
	return func(j *Job) { j.UniqueKey, j.UniqueFor = key, window }
}

// Debounce makes the enqueue a debounced one: the last enqueue of key
// within window wins. If an enqueue of key took its window less than
// window ago (by the Redis clock) and its item still waits (scheduled,
// not yet delivered), that item is deleted and this one is stored in its
// place, with its own id, payload, job and due time; otherwise this one is
// stored as any other. Either way the window restarts now, held by this
// item. So a burst of enqueues, each due window after it, runs once, the
// last, window after the burst ends:
//
//	// Each change of a tenant's catalogue: one reindex, 30 s after the last.
//	Reindex.EnqueueAfter(ctx, q, "reindex:"+changeID, args, 30*time.Second,
//		redisq.Debounce("reindex:"+tenant, 30*time.Second))
//
// An item already delivered is not replaced: an enqueue after its
// delivery is stored beside it. A debounced enqueue is never refused for
// its key, only for an id that exists (other than the replaced item's).
// Where Debounce applies is where Unique does.
func Debounce(key string, window time.Duration) JobOption {
	return func(j *Job) { j.UniqueKey, j.UniqueFor, j.Debounce = key, window, true }
}

// LimitKey makes the item's starts count against key's rate and
// concurrency limits (see Queue.SetRateLimit, Queue.SetConcurrencyLimit)
// instead of the queue's own. Items of a key without a limit are not
// limited. A Partitioned keeps every item of the key in the key's
// partition, so that its limits are exact.
func LimitKey(key string) JobOption {
	return func(j *Job) { j.LimitKey = key }
}

// WithJob sets every field of the item's Job to j's (for a Job read from
// an Item or a Message, to enqueue it again). It copies j.Headers, so that
// a later Header option does not write into j's map.
func WithJob(j Job) JobOption {
	return func(d *Job) {
		*d = j
		d.Headers = maps.Clone(j.Headers)
	}
}

// jobOf applies opts to a zero Job.
func jobOf(opts []JobOption) Job {
	var j Job
	for _, o := range opts {
		if o != nil {
			o(&j)
		}
	}
	return j
}

// check reports what makes j unstorable.
func (j *Job) check() error {
	if len(j.Kind) > MaxKindLen || !utf8.ValidString(j.Kind) {
		return fmt.Errorf("redisq: a Kind must be at most %d bytes of UTF-8 (got %d bytes)", MaxKindLen, len(j.Kind))
	}
	n := 0
	for k, v := range j.Headers {
		if k == "" {
			return fmt.Errorf("redisq: a header with an empty name")
		}
		n += len(k) + len(v)
	}
	if n > MaxHeaderBytes {
		return fmt.Errorf("redisq: headers of %d bytes, over MaxHeaderBytes (%d)", n, MaxHeaderBytes)
	}
	if j.BackoffBase < 0 || j.BackoffMax < 0 || j.Timeout < 0 || j.Retention < 0 {
		return fmt.Errorf("redisq: a Job with a negative duration")
	}
	if j.UniqueKey != "" || j.UniqueFor != 0 || j.Debounce {
		if j.UniqueKey == "" || len(j.UniqueKey) > MaxUniqueKeyLen {
			return fmt.Errorf("redisq: a UniqueKey must be 1 to %d bytes (got %d)", MaxUniqueKeyLen, len(j.UniqueKey))
		}
		if j.UniqueFor <= 0 || j.UniqueFor > MaxUniqueFor {
			return fmt.Errorf("redisq: Unique(%q, %v): the window must be positive and at most %v", j.UniqueKey, j.UniqueFor, MaxUniqueFor)
		}
	}
	if len(j.LimitKey) > MaxLimitKeyLen {
		return fmt.Errorf("redisq: a LimitKey of %d bytes, over MaxLimitKeyLen (%d)", len(j.LimitKey), MaxLimitKeyLen)
	}
	if j.BackoffBase > 0 && j.BackoffMax < j.BackoffBase {
		return fmt.Errorf("redisq: Backoff(%v, %v): the max is below the base", j.BackoffBase, j.BackoffMax)
	}
	return nil
}

// noUnique refuses a Job with a uniqueness window where where cannot keep
// it (see Unique).
func (j *Job) noUnique(where string) error {
	if j.UniqueKey != "" || j.UniqueFor != 0 || j.Debounce {
		return fmt.Errorf("redisq: %s does not take Unique (a uniqueness window applies to Enqueue, Add and EnqueueMany of a Queue)", where)
	}
	return nil
}

// stored is j as the storage layer keeps it.
func (j *Job) stored() rdb.Job {
	r := rdb.Job{Kind: j.Kind, Headers: j.Headers, MaxAttempts: int64(j.MaxAttempts), LimitKey: j.LimitKey}
	if j.BackoffBase > 0 {
		r.BackoffBase, r.BackoffMax = delayUS(j.BackoffBase), delayUS(j.BackoffMax)
	}
	if j.Timeout > 0 {
		r.Timeout = max(delayUS(j.Timeout), 1)
	}
	if !j.NotAfter.IsZero() {
		r.NotAfter = dueMS(j.NotAfter)
	}
	if j.Retention > 0 {
		r.Retention = max(j.Retention.Milliseconds(), 1)
	}
	if j.UniqueKey != "" {
		r.UniqueKey, r.UniqueFor = j.UniqueKey, (j.UniqueFor + time.Millisecond - 1).Milliseconds()
		r.Debounce = j.Debounce
	}
	return r
}

// jobFrom is the Job of a stored one.
func jobFrom(r rdb.Job) Job {
	j := Job{Kind: r.Kind, Headers: r.Headers, MaxAttempts: int(r.MaxAttempts),
		Timeout: time.Duration(r.Timeout) * time.Microsecond, Retention: msDuration(r.Retention), LimitKey: r.LimitKey}
	if r.BackoffBase > 0 {
		j.BackoffBase = time.Duration(r.BackoffBase) * time.Microsecond
		j.BackoffMax = time.Duration(r.BackoffMax) * time.Microsecond
	}
	if r.NotAfter != 0 {
		j.NotAfter = msTime(r.NotAfter)
	}
	if r.UniqueKey != "" {
		j.UniqueKey, j.UniqueFor, j.Debounce = r.UniqueKey, msDuration(r.UniqueFor), r.Debounce
	}
	return j
}
