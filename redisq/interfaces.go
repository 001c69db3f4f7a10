package redisq

import (
	"context"
	"time"
)

// A queue is a *Queue or a *Partitioned (one logical queue over several
// ordinary ones). These interfaces are what the two share, so that code
// that produces to, consumes from or operates either is written once; the
// tools (dqctl, the dashboard, dqbench-redis) use them. Calls on a Partitioned
// route an id to its partition and act on every partition for the whole
// queue (see Partitioned).

// Producer puts items in a queue and changes them by id.
type Producer interface {
	Name() string
	Enqueue(ctx context.Context, id string, payload []byte, at time.Time) error
	EnqueueAfter(ctx context.Context, id string, payload []byte, delay time.Duration) (time.Time, error)
	Add(ctx context.Context, it EnqueueItem) (time.Time, error)
	EnqueueMany(ctx context.Context, items []EnqueueItem) ([]EnqueueResult, error)
	ScheduleItem(ctx context.Context, it EnqueueItem) (ScheduleResult, error)
	Schedule(ctx context.Context, id string, payload []byte, at time.Time) (ScheduleResult, error)
	ScheduleAfter(ctx context.Context, id string, payload []byte, delay time.Duration) (ScheduleResult, error)
	Cancel(ctx context.Context, id string) (CancelOutcome, error)
	Reschedule(ctx context.Context, id string, at time.Time) error
	RescheduleAfter(ctx context.Context, id string, delay time.Duration) (time.Time, error)
}

// Consumer takes a queue's due items and acks them; the Message methods
// settle one.
type Consumer interface {
	Take(ctx context.Context) (*Message, error)
	TakeBatch(ctx context.Context, n int) ([]*Message, error)
	AckTake(ctx context.Context, done *Message) (*Message, error)
	AckMany(ctx context.Context, msgs []*Message) []error
}

// Admin reads and operates a queue: its figures, one item, the dead
// letters, the live workers, and the calls on a whole state or queue.
type Admin interface {
	Name() string
	Stats(ctx context.Context) (Stats, error)
	Exists(ctx context.Context) (bool, error)
	DueHistogram(ctx context.Context, width time.Duration, buckets int) (DueHistogram, error)
	Get(ctx context.Context, id string) (Item, error)
	GetPrefix(ctx context.Context, id string, max int) (Item, error)
	RunNow(ctx context.Context, id string) (RunNowResult, error)
	RequeueDead(ctx context.Context, id string) error
	DeleteDead(ctx context.Context, id string) error
	DeadIDs(ctx context.Context, limit int64) ([]string, error)
	DeadReasons(ctx context.Context, limit int64) (DeadReasonSummary, error)
	RequeueAllDead(ctx context.Context) (int64, error)
	DeleteAllDead(ctx context.Context) (int64, error)
	RequeueDeadByReason(ctx context.Context, reason string) (int64, error)
	DeleteDeadByReason(ctx context.Context, reason string) (int64, error)
	Purge(ctx context.Context, state State) (int64, error)
	Paused(ctx context.Context) (bool, error)
	Pause(ctx context.Context) error
	Resume(ctx context.Context) error
	Workers(ctx context.Context) ([]WorkerInfo, error)
	Audit(ctx context.Context) (*AuditReport, error)
	Destroy(ctx context.Context) (int64, error)
	Close() error
}

// Limiter sets and reads a queue's rate and concurrency limits and its
// uniqueness windows, by limit key (or unique key). On a Partitioned queue
// a key's are its partition's, which holds every item of the key.
type Limiter interface {
	SetRateLimit(ctx context.Context, key string, l RateLimit) error
	RateLimitState(ctx context.Context, key string) (LimitState, error)
	RateLimits(ctx context.Context) ([]LimitState, error)
	TopRateLimits(ctx context.Context, n, scan int) ([]LimitState, LimitTotals, error)
	SetConcurrencyLimit(ctx context.Context, key string, k int) error
	ConcurrencyLimitState(ctx context.Context, key string) (ConcurrencyState, error)
	ConcurrencyLimits(ctx context.Context) ([]ConcurrencyState, error)
	TopConcurrencyLimits(ctx context.Context, n, scan int) ([]ConcurrencyState, LimitTotals, error)
	UniqueWindow(ctx context.Context, key string) (UniqueWindow, error)
	ReleaseUnique(ctx context.Context, key string) (bool, error)
}

// Recurring registers, operates and keeps a queue's recurring jobs. On a
// Partitioned queue a registration is its name's partition's.
type Recurring interface {
	Register(ctx context.Context, name string, s Schedule, payload []byte, opts ...RegisterOption) (RegisterOutcome, error)
	Unregister(ctx context.Context, name string) (bool, error)
	Registration(ctx context.Context, name string) (Registration, error)
	Registrations(ctx context.Context) ([]Registration, error)
	PauseRecurring(ctx context.Context, name string) (bool, error)
	ResumeRecurring(ctx context.Context, name string) (bool, error)
	Backfill(ctx context.Context, name string, from, to time.Time) (BackfillResult, error)
	KeepRecurring(ctx context.Context) error
}

var (
	_ Limiter   = (*Queue)(nil)
	_ Limiter   = (*Partitioned)(nil)
	_ Recurring = (*Queue)(nil)
	_ Recurring = (*Partitioned)(nil)
	_ Producer  = (*Queue)(nil)
	_ Producer  = (*Partitioned)(nil)
	_ Consumer  = (*Queue)(nil)
	_ Consumer  = (*Partitioned)(nil)
	_ Admin     = (*Queue)(nil)
	_ Admin     = (*Partitioned)(nil)
)
