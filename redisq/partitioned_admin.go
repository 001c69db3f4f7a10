package redisq

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/dq-go/delayqueue/redisq/internal/rdb"
	"github.com/redis/go-redis/v9"
)

// Stats returns the sum of the partitions' Stats (one script per
// partition, concurrently): sizes and counters added up, Lateness merged,
// OldestOverdue and Now the largest of the partitions', Paused set when
// every partition is paused. The partitions are read at slightly different
// moments, by their own masters' clocks. It returns ErrClosed after Close
// or the first partition's Redis/context error.
func (p *Partitioned) Stats(ctx context.Context) (Stats, error) {
	ss, err := p.PartitionStats(ctx)
	if err != nil {
		return Stats{}, err
	}
	return SumStats(ss), nil
}

// PartitionStats returns each partition's Stats, in partition order.
func (p *Partitioned) PartitionStats(ctx context.Context) ([]Stats, error) {
	ss := make([]Stats, len(p.parts))
	err := p.each(func(i int, q *Queue) (err error) {
		ss[i], err = q.Stats(ctx)
		return err
	})
	if err != nil {
		return nil, err
	}
	return ss, nil
}

// SumStats adds up the Stats of several queues (the partitions of one, for
// Partitioned.Stats): sizes and counters add (saturating at the int64
// maximum), lateness histograms merge, OldestOverdue and Now are the
// largest, Paused is set when every one is paused, and PausedSince is then
// the latest of their pauses (since when the whole queue is paused).
func SumStats(ss []Stats) Stats {
	var s Stats
	s.Counters = map[string]int64{}
	s.Lateness = Lateness{Bounds: LatenessBounds(), Counts: make([]int64, len(LatenessBounds())+1)}
	s.Paused = len(ss) > 0
	add := func(a, b int64) int64 {
		if b > 0 && a > math.MaxInt64-b {
			return math.MaxInt64
		}
		return a + b
	}
	for _, x := range ss {
		if x.Now.After(s.Now) {
			s.Now = x.Now
		}
		s.Scheduled = add(s.Scheduled, x.Scheduled)
		s.DueBacklog = add(s.DueBacklog, x.DueBacklog)
		s.InFlight = add(s.InFlight, x.InFlight)
		s.Dead = add(s.Dead, x.Dead)
		s.Completed = add(s.Completed, x.Completed)
		s.OldestOverdue = max(s.OldestOverdue, x.OldestOverdue)
		s.Paused = s.Paused && x.Paused
		if x.PausedSince.After(s.PausedSince) {
			s.PausedSince = x.PausedSince
		}
		for _, f := range counterFields {
			*f.get(&s.StatsCounters) = add(*f.get(&s.StatsCounters), *f.get(&x.StatsCounters))
		}
		for k, v := range x.Counters {
			s.Counters[k] = add(s.Counters[k], v)
		}
		for i := range min(len(s.Lateness.Counts), len(x.Lateness.Counts)) {
			s.Lateness.Counts[i] = add(s.Lateness.Counts[i], x.Lateness.Counts[i])
		}
		s.Lateness.Sum = time.Duration(add(int64(s.Lateness.Sum), int64(x.Lateness.Sum)))
	}
	if !s.Paused {
		s.PausedSince = time.Time{}
	}
	return s
}

// PartitionedListOptions selects a page of Partitioned.List.
type PartitionedListOptions struct {
	// Cursor is where the page starts: the Next of the previous page, or
	// nil for the first page. It holds one offset per partition.
	Cursor   []int64
	Limit    int  // items per page, 1..MaxPage; 0 means 100
	Reverse  bool // latest first, as ListOptions.Reverse
	Payloads bool // include each item's payload
	// Reason keeps the dead items of one cause of death, as
	// ListOptions.Reason: a page may then hold fewer items than Limit, or
	// none, and still have a Next.
	Reason string
	// Kind keeps the items of one kind, as ListOptions.Kind, with the same
	// effect on pages as Reason.
	Kind string
}

// PartitionedItem is an item of a Partitioned.List page and its partition.
type PartitionedItem struct {
	Item
	Partition int `json:"partition"`
}

// PartitionedPage is one page of Partitioned.List.
type PartitionedPage struct {
	Now   time.Time // the latest of the partitions' Redis TIMEs of the page
	Total int64     // items in the state in all partitions when the page was read
	Items []PartitionedItem
	// Next is the Cursor of the following page, or nil after the last one.
	Next []int64
}

// List returns one page of the items in state across partitions, merged in
// the state's order (as Queue.List: due time, lease deadline or time of
// death; among equal times, the lower partition first and each partition's
// own order), Reverse turning it around. A page is not an offset into the
// merged order, which no partition knows: it goes on from a cursor of one
// offset per partition. Each call reads a Queue.List page of opt.Limit
// items from every partition at its offset (concurrently; P scripts,
// O(P·(log n + limit))), merges them, and returns the first opt.Limit items
// of the merge, stopping early where a partition's page ended before its
// items did (a page with payloads ends after 1 MiB), so that no item of the
// merged order is skipped; Next advances each partition's offset by the
// items of it returned. Pages are read at different moments, so an item
// that moves between two calls can be missed or seen twice, as with
// Queue.List. It returns ErrClosed after Close, an error for a bad state,
// page or cursor, or the first partition's Redis/context error.
func (p *Partitioned) List(ctx context.Context, state State, opt PartitionedListOptions) (PartitionedPage, error) {
	if !slices.Contains(States, state) {
		return PartitionedPage{}, fmt.Errorf("redisq: bad state %d", state)
	}
	offs := make([]int64, len(p.parts))
	if opt.Cursor != nil {
		if len(opt.Cursor) != len(p.parts) {
			return PartitionedPage{}, fmt.Errorf("redisq: bad cursor: %d offsets for %d partitions", len(opt.Cursor), len(p.parts))
		}
		copy(offs, opt.Cursor)
	}
	if opt.Limit == 0 {
		opt.Limit = 100
	}
	for _, o := range offs {
		if o < 0 {
			return PartitionedPage{}, fmt.Errorf("redisq: bad cursor: offset %d", o)
		}
	}
	if opt.Limit < 1 || opt.Limit > MaxPage {
		return PartitionedPage{}, fmt.Errorf("redisq: bad page: limit %d (want 1..%d)", opt.Limit, MaxPage)
	}
	pages := make([]Page, len(p.parts))
	err := p.each(func(i int, q *Queue) (err error) {
		pages[i], err = q.List(ctx, state, ListOptions{Offset: offs[i], Limit: opt.Limit, Reverse: opt.Reverse, Payloads: opt.Payloads, Reason: opt.Reason, Kind: opt.Kind})
		return err
	})
	if err != nil {
		return PartitionedPage{}, err
	}
	key := func(it *Item) time.Time {
		switch state {
		case StateInFlight:
			return it.LeaseDeadline
		case StateDead:
			return it.DiedAt
		case StateCompleted:
			return it.Expires
		}
		return it.Due
	}
	// before reports whether partition a's next item goes before b's.
	before := func(a, b int) bool {
		ka, kb := key(&pages[a].Items[0]), key(&pages[b].Items[0])
		if !ka.Equal(kb) {
			return ka.Before(kb) != opt.Reverse
		}
		return (a < b) != opt.Reverse
	}
	out := PartitionedPage{}
	for _, pg := range pages {
		out.Total += pg.Total
		if pg.Now.After(out.Now) {
			out.Now = pg.Now
		}
	}
	// next is each partition's offset after what the merge took: past its
	// last item taken, or past its whole page when all of it was taken
	// (items a Reason left out are skipped with it).
	next := slices.Clone(offs)
merge:
	for len(out.Items) < opt.Limit {
		best := -1
		for i := range pages {
			if len(pages[i].Items) == 0 {
				if pages[i].Next >= 0 {
					break merge // its next item is unread: it may go first
				}
				continue
			}
			if best < 0 || before(i, best) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		out.Items = append(out.Items, PartitionedItem{Item: pages[best].Items[0], Partition: best})
		next[best] = pages[best].Items[0].pos + 1
		pages[best].Items = pages[best].Items[1:]
	}
	for i := range pages {
		if len(pages[i].Items) == 0 && pages[i].Next >= 0 {
			next[i] = pages[i].Next
		}
	}
	for i := range pages {
		if len(pages[i].Items) > 0 || pages[i].Next >= 0 {
			out.Next = next
			break
		}
	}
	return out, nil
}

// DeadIDs returns up to limit ids of dead items, oldest death first across
// partitions (merged List pages of the dead items, without payloads).
// Revive one with Reschedule or drop it with Cancel on its partition (the
// Partitioned's calls route by the id; an item enqueued under an ordering
// key is on the partition of its key).
func (p *Partitioned) DeadIDs(ctx context.Context, limit int64) ([]string, error) {
	var ids []string
	opt := PartitionedListOptions{}
	for int64(len(ids)) < limit {
		opt.Limit = int(min(limit-int64(len(ids)), MaxPage))
		pg, err := p.List(ctx, StateDead, opt)
		if err != nil {
			return nil, err
		}
		for _, it := range pg.Items {
			ids = append(ids, it.ID)
		}
		if pg.Next == nil {
			break
		}
		opt.Cursor = pg.Next
	}
	return ids, nil
}

// DueHistogram adds up the partitions' DueHistograms (one script per
// partition, concurrently). Each partition counts from its own master's
// TIME, which Now, the latest of them, does not correct for. Arguments and
// errors as Queue.DueHistogram.
func (p *Partitioned) DueHistogram(ctx context.Context, width time.Duration, buckets int) (DueHistogram, error) {
	hs := make([]DueHistogram, len(p.parts))
	err := p.each(func(i int, q *Queue) (err error) {
		hs[i], err = q.DueHistogram(ctx, width, buckets)
		return err
	})
	if err != nil {
		return DueHistogram{}, err
	}
	out := DueHistogram{Width: hs[0].Width, Counts: make([]int64, len(hs[0].Counts))}
	for _, h := range hs {
		if h.Now.After(out.Now) {
			out.Now = h.Now
		}
		out.Overdue += h.Overdue
		out.Later += h.Later
		for i := range min(len(h.Counts), len(out.Counts)) {
			out.Counts[i] += h.Counts[i]
		}
	}
	return out, nil
}

// Purge is Queue.Purge on every partition (concurrently); it returns the
// total. ErrNoQueue only when no partition has data.
func (p *Partitioned) Purge(ctx context.Context, state State) (int64, error) {
	return p.sum(func(q *Queue) (int64, error) { return q.Purge(ctx, state) })
}

// RequeueAllDead is Queue.RequeueAllDead on every partition (concurrently);
// it returns the total. ErrNoQueue only when no partition has data.
func (p *Partitioned) RequeueAllDead(ctx context.Context) (int64, error) {
	return p.sum(func(q *Queue) (int64, error) { return q.RequeueAllDead(ctx) })
}

// DeleteAllDead is Queue.DeleteAllDead on every partition (concurrently);
// it returns the total. ErrNoQueue only when no partition has data.
func (p *Partitioned) DeleteAllDead(ctx context.Context) (int64, error) {
	return p.sum(func(q *Queue) (int64, error) { return q.DeleteAllDead(ctx) })
}

// sum runs fn on every partition and adds up the counts; a partition's
// ErrNoQueue counts 0, and is returned only when every partition's is.
func (p *Partitioned) sum(fn func(q *Queue) (int64, error)) (int64, error) {
	ns := make([]int64, len(p.parts))
	var mu sync.Mutex
	none := 0
	err := p.each(func(i int, q *Queue) error {
		n, err := fn(q)
		ns[i] = n
		if errors.Is(err, ErrNoQueue) {
			mu.Lock()
			none++
			mu.Unlock()
			return nil
		}
		return err
	})
	var total int64
	for _, n := range ns {
		total += n
	}
	if err == nil && none == len(p.parts) {
		err = ErrNoQueue
	}
	return total, err
}

// Audit runs Queue.Audit on every partition (concurrently) and adds the
// reports up, each problem prefixed with its partition's name; it also
// reads the stored partition table as PartitionNames does and reports it
// when it is missing, is not one redisq wrote, says fewer partitions than
// hold data (ErrBadPartitionTable's findings), or names other partitions
// than these. Same caveats as Queue.Audit (not atomic; run it on a
// quiescent queue). It returns a report, or a Redis/context error.
func (p *Partitioned) Audit(ctx context.Context) (*AuditReport, error) {
	reps := make([]*AuditReport, len(p.parts))
	err := p.each(func(i int, q *Queue) (err error) {
		reps[i], err = q.Audit(ctx)
		return err
	})
	if err != nil {
		return nil, err
	}
	out := &AuditReport{}
	problem := func(s string) {
		if len(out.Problems) >= 100 {
			out.More++
			return
		}
		out.Problems = append(out.Problems, s)
	}
	names, err := PartitionNames(ctx, p.client, p.name)
	switch {
	case errors.Is(err, ErrNoQueue):
		problem(fmt.Sprintf("partition table %s is missing", p.meta))
	case errors.Is(err, ErrBadPartitionTable):
		problem(err.Error())
	case err != nil:
		return nil, err
	default:
		mine := make([]string, len(p.parts))
		for i, q := range p.parts {
			mine[i] = q.Name()
		}
		if !slices.Equal(names, mine) {
			problem(fmt.Sprintf("partition table %s names %q, this queue uses %q", p.meta, names, mine))
		}
	}
	for i, r := range reps {
		out.Items += r.Items
		out.Scheduled += r.Scheduled
		out.Leased += r.Leased
		out.Dead += r.Dead
		out.Unlisted += r.Unlisted
		for _, s := range r.Problems {
			problem(fmt.Sprintf("partition %q: %s", p.parts[i].Name(), s))
		}
		out.More += r.More
	}
	return out, nil
}

// Destroy destroys every partition (Queue.Destroy, concurrently), then the
// partition table, and removes the name from PartitionedRegistryKey. It
// returns the number of keys deleted, or ErrNoQueue when there were none.
// A new NewPartitioned may then create the queue again, with any partition
// count; a Partitioned value of it that writes again stores its partition
// table and registers its name again (at the first write of each
// partition). Stop the queue's producers and consumers first, as for
// Queue.Destroy. Works after Close.
func (p *Partitioned) Destroy(ctx context.Context) (int64, error) {
	n, err := p.sum(func(q *Queue) (int64, error) { return q.Destroy(ctx) })
	if err != nil && !errors.Is(err, ErrNoQueue) {
		return n, err
	}
	d, derr := rdb.DeletePartitionTable(ctx, p.client, p.name)
	if derr != nil {
		return n, derr
	}
	n += d
	if rerr := rdb.Unregister(ctx, p.client, PartitionedRegistryKey, p.name); rerr != nil {
		return n, fmt.Errorf("redisq: partitioned queue deleted, but its name is still in %s: %w", PartitionedRegistryKey, rerr)
	}
	if n == 0 {
		return 0, ErrNoQueue
	}
	return n, nil
}

// Exists reports whether the queue's partition table exists (one round
// trip).
func (p *Partitioned) Exists(ctx context.Context) (bool, error) {
	return rdb.PartitionTableExists(ctx, p.client, p.name)
}

// Pause pauses every partition (Queue.Pause, concurrently).
func (p *Partitioned) Pause(ctx context.Context) error {
	return p.each(func(_ int, q *Queue) error { return q.Pause(ctx) })
}

// Resume resumes every partition (Queue.Resume, concurrently).
func (p *Partitioned) Resume(ctx context.Context) error {
	return p.each(func(_ int, q *Queue) error { return q.Resume(ctx) })
}

// Paused reports whether every partition is paused (one round trip per
// partition, concurrently); PartitionStats tells them apart.
func (p *Partitioned) Paused(ctx context.Context) (bool, error) {
	all := true
	var mu sync.Mutex
	err := p.each(func(_ int, q *Queue) error {
		b, err := q.Paused(ctx)
		mu.Lock()
		all = all && b
		mu.Unlock()
		return err
	})
	return all && err == nil, err
}

// listPage is the COUNT of ListPartitioned's SSCAN pages and the size of
// its pipelines.
const listPage = 1000

// PartitionedInfo is one partitioned queue of ListPartitioned.
type PartitionedInfo struct {
	Name string
	// Partitions are the names of its partitions (ordinary queues), in
	// partition order; nil when Err is set.
	Partitions []string
	// Err says why the partition table could not be read.
	Err error
}

// ListPartitioned returns the partitioned queues registered on the server
// that c talks to (PartitionedRegistryKey) that have their partition table,
// sorted by name, each with its partitions' names, so that a tool can show
// those ordinary queues (ListQueues lists them too) as the partitions of
// one queue. Cost: SSCAN pages of 1000 names, then one HGETALL per name,
// pipelined by 1000. A table that cannot be read is reported in its
// entry's Err.
func ListPartitioned(ctx context.Context, c redis.UniversalClient) ([]PartitionedInfo, error) {
	names, err := rdb.Registered(ctx, c, PartitionedRegistryKey)
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	var out []PartitionedInfo
	for len(names) > 0 {
		chunk := names[:min(len(names), listPage)]
		names = names[len(chunk):]
		tables, err := rdb.PartitionTables(ctx, c, chunk)
		if err != nil {
			return nil, err
		}
		for i, t := range tables {
			switch {
			case t.Err != nil:
				out = append(out, PartitionedInfo{Name: chunk[i], Err: t.Err})
			case len(t.Fields) == 0:
				continue // destroyed, or never created
			default:
				parts, perr := parsePartitions(chunk[i], t.Fields)
				out = append(out, PartitionedInfo{Name: chunk[i], Partitions: parts, Err: perr})
			}
		}
	}
	return out, nil
}

// RunNow is Queue.RunNow on the partition that holds id (see byID).
func (p *Partitioned) RunNow(ctx context.Context, id string) (RunNowResult, error) {
	return byID(p, id, func(q *Queue) (RunNowResult, error) { return q.RunNow(ctx, id) })
}

// RequeueDeadByReason is Queue.RequeueDeadByReason on every partition
// (concurrently); it returns the total. ErrNoQueue only when no partition
// has data.
func (p *Partitioned) RequeueDeadByReason(ctx context.Context, reason string) (int64, error) {
	return p.sum(func(q *Queue) (int64, error) { return q.RequeueDeadByReason(ctx, reason) })
}

// DeleteDeadByReason is Queue.DeleteDeadByReason on every partition
// (concurrently); it returns the total. ErrNoQueue only when no partition
// has data.
func (p *Partitioned) DeleteDeadByReason(ctx context.Context, reason string) (int64, error) {
	return p.sum(func(q *Queue) (int64, error) { return q.DeleteDeadByReason(ctx, reason) })
}

// DeadReasons is Queue.DeadReasons on every partition (concurrently, limit
// items each), merged: counts add up, Dead and Examined are the sums, Now
// the latest.
func (p *Partitioned) DeadReasons(ctx context.Context, limit int64) (DeadReasonSummary, error) {
	sums := make([]DeadReasonSummary, len(p.parts))
	err := p.each(func(i int, q *Queue) (err error) {
		sums[i], err = q.DeadReasons(ctx, limit)
		return err
	})
	if err != nil {
		return DeadReasonSummary{}, err
	}
	return mergeDeadReasons(sums), nil
}

// Workers is Queue.Workers of every partition (concurrently), sorted by
// name, then partition queue, then id.
func (p *Partitioned) Workers(ctx context.Context) ([]WorkerInfo, error) {
	ws := make([][]WorkerInfo, len(p.parts))
	err := p.each(func(i int, q *Queue) (err error) {
		ws[i], err = q.Workers(ctx)
		return err
	})
	if err != nil {
		return nil, err
	}
	out := slices.Concat(ws...)
	slices.SortStableFunc(out, func(a, b WorkerInfo) int {
		return cmp.Or(strings.Compare(a.Name, b.Name), strings.Compare(a.Queue, b.Queue), strings.Compare(a.ID, b.ID))
	})
	return out, nil
}
