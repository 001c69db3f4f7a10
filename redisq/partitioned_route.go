package redisq

import (
	"errors"
	"fmt"
	"sync"
)

// Where a Partitioned puts an item, and where it looks for one.
//
// An item goes to the partition of its id, unless its Job has a limit key
// or a unique key: then to that key's partition, so that all the items of
// one key meet in one partition (one Cluster slot), where the key's rate
// and concurrency limits and its uniqueness window are exact as on a
// Queue. The occurrences of a recurring registration live in the
// partition of its name, with the registration. A call by id looks in the
// id's partition first and, when the item is not there, in the others
// (concurrently): an item enqueued under a key, a registration or an
// ordering key (Route) lives in that key's partition.

// partitionOfItem returns the partition Add, EnqueueMany and ScheduleItem
// put it in: its limit key's, else its unique key's, else its id's. An
// item whose two keys are of different partitions is refused: its limits
// and its window could not both be exact.
func (p *Partitioned) partitionOfItem(it EnqueueItem) (int, error) {
	j := it.Job
	switch {
	case j.LimitKey != "" && j.UniqueKey != "":
		lk, uk := p.PartitionOf(j.LimitKey), p.PartitionOf(j.UniqueKey)
		if lk != uk {
			return 0, fmt.Errorf("redisq: item %q: its LimitKey %q and UniqueKey %q are of partitions %d and %d of %q; a Partitioned keeps a key's items in its key's partition, so an item's two keys must share one (give them the same value, or use a Queue)",
				it.ID, j.LimitKey, j.UniqueKey, lk, uk, p.name)
		}
		return lk, nil
	case j.LimitKey != "":
		return p.PartitionOf(j.LimitKey), nil
	case j.UniqueKey != "":
		return p.PartitionOf(j.UniqueKey), nil
	}
	return p.PartitionOf(it.ID), nil
}

// byID runs fn on the partition of id and, when fn finds no item there
// (ErrNotFound), on the partition of an occurrence's registration, then
// on the others, concurrently. It returns the answer of the partition that
// found the item (its result, or an outcome of it such as ErrInFlight);
// else the error of the lowest partition that failed, since the item may
// be there; else ErrNotFound.
func byID[T any](p *Partitioned, id string, fn func(q *Queue) (T, error)) (T, error) {
	first := []int{p.PartitionOf(id)}
	if name, _, ok := Occurrence(id); ok {
		if k := p.PartitionOf(name); k != first[0] {
			first = append(first, k)
		}
	}
	looked := make([]bool, len(p.parts))
	for _, k := range first {
		looked[k] = true
		if v, err := fn(p.parts[k]); !errors.Is(err, ErrNotFound) {
			return v, err
		}
	}
	type res struct {
		v   T
		err error
	}
	rs := make([]res, len(p.parts))
	var wg sync.WaitGroup
	for i, q := range p.parts {
		if looked[i] {
			rs[i].err = ErrNotFound
			continue
		}
		wg.Go(func() {
			v, err := fn(q)
			rs[i] = res{v, err}
		})
	}
	wg.Wait()
	var zero T
	var failed error
	for i, r := range rs {
		switch {
		case r.err == nil || itemOutcome(r.err):
			return r.v, r.err
		case !errors.Is(r.err, ErrNotFound) && failed == nil:
			failed = fmt.Errorf("redisq: partition %q: %w", p.parts[i].Name(), r.err)
		}
	}
	if failed != nil {
		return zero, failed
	}
	return zero, ErrNotFound
}

// itemOutcome reports whether err is what a call by id says of an item
// it found (not a failure to look).
func itemOutcome(err error) bool {
	return errors.Is(err, ErrInFlight) || errors.Is(err, ErrNotDead)
}
