package redisq

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"
)

// EvictionCheck selects what New does when the server's maxmemory-policy is
// not noeviction (an evicting server may silently drop queue keys).
type EvictionCheck int

const (
	// EvictionFail makes New return an error wrapping ErrEvictionPolicy. Default.
	EvictionFail EvictionCheck = iota
	// EvictionWarn makes New log a warning and continue.
	EvictionWarn
	// EvictionIgnore skips the check (no CONFIG GET is sent).
	EvictionIgnore
)

type options struct {
	visibility   time.Duration
	maxAttempts  int
	backoffBase  time.Duration
	backoffMax   time.Duration
	wakeCap      time.Duration
	reclaimBatch int
	waitClient   redis.UniversalClient
	eviction     EvictionCheck
	logger       *slog.Logger
	noRegistry   bool
	// migrationWait bounds the retries of a call while its Cluster slot
	// migrates (WithMigrationWait).
	migrationWait time.Duration
	// replicas and replicaTimeout: WithReplicaAcks (0: no WAIT).
	replicas       int
	replicaTimeout time.Duration
}

func defaultOptions() options {
	return options{
		visibility:    30 * time.Second,
		maxAttempts:   DefaultMaxAttempts,
		backoffBase:   time.Second,
		backoffMax:    5 * time.Minute,
		wakeCap:       5 * time.Second,
		reclaimBatch:  100,
		eviction:      EvictionFail,
		logger:        slog.Default(),
		migrationWait: defaultMigrationWait,
	}
}

// Option configures New.
type Option func(*options) error

// WithVisibilityTimeout sets how long a claimed message stays leased before it
// is returned to the schedule (default 30s): the lease deadline is Redis TIME
// at the claim + d, rounded up to the millisecond. Must be at least 1ms.
func WithVisibilityTimeout(d time.Duration) Option {
	return func(o *options) error {
		if d < time.Millisecond {
			return fmt.Errorf("redisq: visibility timeout %v < 1ms", d)
		}
		o.visibility = d
		return nil
	}
}

// DefaultMaxAttempts is how many deliveries an item gets when neither its
// queue (WithMaxAttempts) nor its Job (MaxAttempts) says: 10 runs, where
// asynq's default is 25 retries (26 runs).
const DefaultMaxAttempts = 10

// NoAttemptLimit, given to WithMaxAttempts or MaxAttempts (any negative
// number does), is no limit: a failed item is retried for ever.
const NoAttemptLimit = -1

// WithMaxAttempts sets how many deliveries an item gets before a failed one
// (lease expiry or Nack) moves it to the dead set: n > 0 that many, 0 the
// default (DefaultMaxAttempts), NoAttemptLimit (or any negative n) no
// limit. Zero means the default here as in Job.MaxAttempts. (Before, 0
// was no limit: a queue that relied on it says NoAttemptLimit now.)
func WithMaxAttempts(n int) Option {
	return func(o *options) error {
		o.maxAttempts = attemptLimit(n)
		return nil
	}
}

// attemptLimit is n as the scripts take a default max attempts: 0 no
// limit.
func attemptLimit(n int) int {
	switch {
	case n == 0:
		return DefaultMaxAttempts
	case n < 0:
		return 0
	}
	return n
}

// WithBackoff sets the redelivery delay after the k-th failed attempt:
// min(max, base·2^(k-1)) (default base 1s, max 5m), counted from Redis TIME
// when the failure is handled and rounded up to the millisecond, never down.
// base 0 redelivers at once.
func WithBackoff(base, max time.Duration) Option {
	return func(o *options) error {
		if base < 0 || max < base {
			return fmt.Errorf("redisq: bad backoff base %v max %v", base, max)
		}
		o.backoffBase, o.backoffMax = base, max
		return nil
	}
}

// WithWakeCap caps one blocked wait in Take (default 5s). It bounds the cost
// of a lost wake-up and how late an expired lease is noticed by an otherwise
// idle consumer. Must be at least 10ms.
func WithWakeCap(d time.Duration) Option {
	return func(o *options) error {
		if d < 10*time.Millisecond {
			return fmt.Errorf("redisq: wake cap %v < 10ms", d)
		}
		o.wakeCap = d
		return nil
	}
}

// WithReclaimBatch bounds how many expired leases one claim script returns to
// the schedule (default and maximum 100, which with the at most 100 items a
// claim script leases keeps each script to a few milliseconds; larger values
// were accepted before and are now an error). A larger pile of expired leases
// is worked off by consecutive claims.
func WithReclaimBatch(n int) Option {
	return func(o *options) error {
		if n < 1 || n > scriptBatch {
			return fmt.Errorf("redisq: reclaim batch %d not in 1..%d (one claim script's bound)", n, scriptBatch)
		}
		o.reclaimBatch = n
		return nil
	}
}

// WithWaitClient sets the client used for the blocking BZPOPMIN wait in Take.
// Each blocked Take holds one of its connections for up to the wake cap; give
// it a separate client (or size the main client's PoolSize to at least the
// number of concurrent Take calls plus headroom) so blocked consumers do not
// starve other commands. The caller keeps ownership and closes it.
func WithWaitClient(c redis.UniversalClient) Option {
	return func(o *options) error {
		if c == nil {
			return fmt.Errorf("redisq: nil wait client")
		}
		o.waitClient = c
		return nil
	}
}

// WithEvictionCheck selects the startup maxmemory-policy check (default
// EvictionFail).
func WithEvictionCheck(c EvictionCheck) Option {
	return func(o *options) error { o.eviction = c; return nil }
}

// WithLogger sets the logger for startup warnings and notes (default
// slog.Default()).
func WithLogger(l *slog.Logger) Option {
	return func(o *options) error {
		if l == nil {
			return fmt.Errorf("redisq: nil logger")
		}
		o.logger = l
		return nil
	}
}

// WithoutRegistry makes New leave the registry (RegistryKey) alone. Tools
// that open a queue by a name a user typed (dqctl, the dashboard, an
// exporter) use it, so that a mistyped or hostile name is not added to the
// registry; producers and consumers register their queues (the default).
func WithoutRegistry() Option {
	return func(o *options) error { o.noRegistry = true; return nil }
}

// defaultMigrationWait is WithMigrationWait's default.
const defaultMigrationWait = 30 * time.Second

// WithMigrationWait sets how long a call keeps retrying, with a backoff of
// 5 to 250 ms, while Redis Cluster refuses it because the queue's slot is
// migrating to another node (TRYAGAIN, or a redirect go-redis did not
// follow to the end) or the cluster is reconfiguring (CLUSTERDOWN): default
// 30 s, within the call's ctx; 0 returns such errors at once. A queue's
// calls stall while its slot moves: see "Redis Cluster" in the package doc.
func WithMigrationWait(d time.Duration) Option {
	return func(o *options) error {
		if d < 0 {
			return fmt.Errorf("redisq: migration wait %v < 0", d)
		}
		o.migrationWait = d
		return nil
	}
}

// WithReplicaAcks makes every acknowledging write (Enqueue and the other
// enqueues, Schedule, Ack, AckTake's ack, AckMany, Nack, DeadLetter,
// Release, Extend, Cancel, Reschedule, Pause, Resume, Register,
// Unregister, the keepers' enqueues of occurrences and the admin calls,
// batches included) return only once n replicas of the master holding the queue
// confirm it: the script is followed by WAIT n timeout on the same
// connection, in the same round trip. When fewer confirm within timeout the
// call returns an error wrapping ErrNotReplicated: the write was applied on
// the master and may or may not survive a failover. A claim that acks
// nothing is not confirmed (a claim lost in a failover only redelivers
// earlier). Redis replication is asynchronous: without this option a write
// acknowledged in the moment before a master dies can be lost with it, an
// ack undone (the item delivered again). It costs a round trip to the
// replicas on every write and a write stops while fewer than n replicas are
// connected: give each master n+1 replicas so that one resyncing replica
// does not stop writes. timeout must be positive and below the client's
// ReadTimeout. Needs a *redis.Client or *redis.ClusterClient.
func WithReplicaAcks(n int, timeout time.Duration) Option {
	return func(o *options) error {
		if n < 1 || timeout <= 0 {
			return fmt.Errorf("redisq: replica acks %d within %v: want n >= 1 and a positive timeout", n, timeout)
		}
		o.replicas, o.replicaTimeout = n, timeout
		return nil
	}
}
