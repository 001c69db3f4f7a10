package redisq

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// A Partitioned queue's recurring registrations. A registration lives in
// the partition of its name (PartitionOf), with its occurrences, so that
// the partition's keepers enqueue each occurrence exactly once, as a
// Queue's do: every call of one registration is that partition's call,
// and the calls over all of them go to every partition.

// Register is Queue.Register on the partition of name. The occurrences of
// a job with a LimitKey live in the name's partition too, so the key must
// be of that partition (PartitionOf(key) == PartitionOf(name)) for its
// limits to hold; another is refused.
func (p *Partitioned) Register(ctx context.Context, name string, s Schedule, payload []byte, opts ...RegisterOption) (RegisterOutcome, error) {
	var c registerConfig
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	if k := c.job.LimitKey; k != "" && p.PartitionOf(k) != p.PartitionOf(name) {
		return 0, fmt.Errorf("redisq: Register(%q) on %q: its occurrences live in the partition of its name (%d), and its LimitKey %q is of partition %d: choose a name or a key of one partition (PartitionOf), or use a Queue",
			name, p.name, p.PartitionOf(name), k, p.PartitionOf(k))
	}
	return p.Route(name).Register(ctx, name, s, payload, opts...)
}

// Unregister is Queue.Unregister on the partition of name.
func (p *Partitioned) Unregister(ctx context.Context, name string) (bool, error) {
	return p.Route(name).Unregister(ctx, name)
}

// PauseRecurring is Queue.PauseRecurring on the partition of name.
func (p *Partitioned) PauseRecurring(ctx context.Context, name string) (bool, error) {
	return p.Route(name).PauseRecurring(ctx, name)
}

// ResumeRecurring is Queue.ResumeRecurring on the partition of name.
func (p *Partitioned) ResumeRecurring(ctx context.Context, name string) (bool, error) {
	return p.Route(name).ResumeRecurring(ctx, name)
}

// Backfill is Queue.Backfill on the partition of name.
func (p *Partitioned) Backfill(ctx context.Context, name string, from, to time.Time) (BackfillResult, error) {
	return p.Route(name).Backfill(ctx, name, from, to)
}

// Registration is Queue.Registration on the partition of name.
func (p *Partitioned) Registration(ctx context.Context, name string) (Registration, error) {
	return p.Route(name).Registration(ctx, name)
}

// Registrations is Queue.Registrations of every partition (concurrently),
// sorted by name.
func (p *Partitioned) Registrations(ctx context.Context) ([]Registration, error) {
	rs, err := gather(p, func(q *Queue) ([]Registration, error) { return q.Registrations(ctx) })
	if err != nil {
		return nil, err
	}
	slices.SortFunc(rs, func(a, b Registration) int { return strings.Compare(a.Name, b.Name) })
	return rs, nil
}

// KeepRecurring is Queue.KeepRecurring of every partition, concurrently:
// it returns when every partition's has (nil when ctx ended, ErrClosed
// when the queue was closed). Every Worker over the queue runs it.
func (p *Partitioned) KeepRecurring(ctx context.Context) error {
	errs := make([]error, len(p.parts))
	var wg sync.WaitGroup
	for i, q := range p.parts {
		wg.Go(func() { errs[i] = q.KeepRecurring(ctx) })
	}
	wg.Wait()
	for _, err := range errs {
		if errors.Is(err, ErrClosed) {
			return ErrClosed
		}
	}
	return errors.Join(errs...)
}
