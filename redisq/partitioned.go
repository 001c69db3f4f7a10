package redisq

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/dq-go/delayqueue/redisq/internal/rdb"
	"github.com/redis/go-redis/v9"
)

// MaxPartitions is the largest partition count of a Partitioned queue.
// Each partition costs a goroutine and, while callers take, a blocked
// connection of the wait client (see Partitioned).
const MaxPartitions = 256

// PartitionedRegistryKey is the Redis set of the names of partitioned
// queues, as RegistryKey is of ordinary ones: NewPartitioned adds its name
// (one SADD, best effort; not with WithoutRegistry), Destroy removes it,
// ListPartitioned reads it. The partitions themselves are ordinary queues
// and are registered in RegistryKey as such.
const PartitionedRegistryKey = rdb.PartitionedRegistryKey

// ErrPartitions is wrapped by NewPartitioned's error when the queue exists
// with another partition count: the count is fixed when the queue is
// created, since it decides which partition every id and ordering key
// lives in. Nothing is changed.
var ErrPartitions = errors.New("redisq: partition count mismatch")

// ErrBadPartitionTable is wrapped by the error of NewPartitioned,
// OpenPartitioned and PartitionNames when the partition table Redis holds
// for the name is not one redisq wrote (a bad count or version, a field
// past the count, a partition name not the layout's) or says fewer
// partitions than hold data. Nothing is changed. Partitioned.Audit reports
// the same findings as problems.
var ErrBadPartitionTable = errors.New("redisq: bad partition table")

// Partitioned is one logical delay queue stored as P ordinary queues (its
// partitions) in different Redis Cluster slots, so that P masters share its
// work: one queue lives in one slot and so on one master's single thread,
// however many masters the Cluster has. P is fixed when the queue is
// created (NewPartitioned stores it) and checked by every NewPartitioned.
//
// # Layout
//
// Partition i of the queue NAME with P partitions is the ordinary queue
// NAME~i.j (PartitionLayout), whose slot is in the i-th of P equal ranges
// of the Cluster's slots, so that on a Cluster whose masters hold equal
// slot ranges the partitions land on min(P, masters) masters, evenly. The
// names are stored when the queue is created, in the hash {dq:NAME}:parts,
// which every later NewPartitioned and OpenPartitioned checks: a table
// changed by hand fails the open with ErrBadPartitionTable. How the
// layout is computed and checked: docs/redisq-design.md.
//
// # Routing
//
// Every item has a key that chooses its partition: its id, unless its Job
// has a limit key or a unique key (then that key: every item of the key
// meets in one partition, where its limits and window are exact), or it
// was enqueued through Route(key), or it is an occurrence of a recurring
// registration (which lives in its name's partition). The partition of a
// key is the 32-bit FNV-1a hash of its bytes modulo P (PartitionOf), fixed
// for the life of the queue. Cancel, Reschedule, Get, RunNow and the
// dead-letter calls look in the id's partition first, and in the others
// when the item is not there. Items that share an ordering key are
// enqueued through Route(key), which returns their partition's Queue, so
// that they stay FIFO in one partition. Ids are unique per partition: the
// same id enqueued under two keys that route to different partitions is
// two items (Locate finds where an id lives).
//
// The limits and uniqueness windows of a key (Limiter) and the recurring
// registrations (Recurring) are those of the partition that holds the key
// or the registration, so they behave as on a Queue; see SetRateLimit and
// Register.
//
// # Taking
//
// Take, TakeBatch and AckTake hand out the items of every partition, see
// Take for how and in which order. Messages belong to their partition's
// Queue: Ack, Nack, Extend and the rest work as on any Message.
//
// # Everything else
//
// Stats, List, DueHistogram, Purge, Audit, Destroy and the other admin
// calls act on every partition and merge the results; Partition(i) gives
// any of them for one partition. Do not Close the partitions' Queues:
// Close the Partitioned, which closes them.
//
// All methods are safe for concurrent use.
type Partitioned struct {
	client redis.UniversalClient
	name   string
	parts  []*Queue
	index  map[string]int // partition name -> index
	meta   string         // {dq:NAME}:parts
	opt    options        // noRegistry and logger, for renew

	tk        *taker
	acks      []*groupCommit[*ackReq] // by partition: AckTake's combined acks
	closeOnce sync.Once
}

// partitionsKey is the hash that stores the partition table of the
// partitioned queue name.
func partitionsKey(name string) string { return rdb.PartitionsKey(name) }

// PartitionLayout returns the names NewPartitioned gives the partitions of
// a new queue name with partitions partitions (see Partitioned's Layout).
// A queue that exists keeps the names stored when it was created; read
// them with PartitionNames. It panics on a bad name or count.
func PartitionLayout(name string, partitions int) []string {
	if !validName(name) || partitions < 1 || partitions > MaxPartitions {
		panic(fmt.Sprintf("redisq: PartitionLayout(%q, %d)", name, partitions))
	}
	names := make([]string, partitions)
	for i := range names {
		names[i] = layoutName(name, i, partitions)
	}
	return names
}

// layoutName is partition i of PartitionLayout(name, partitions).
func layoutName(name string, i, partitions int) string {
	// Away from the range's ends, where Cluster tools round the
	// boundaries between masters either way.
	lo, hi := i*rdb.ClusterSlots/partitions+1, (i+1)*rdb.ClusterSlots/partitions-1
	// The slot of the tag "dq:NAME~i.j" (a name has no braces), its
	// prefix's CRC computed once.
	prefix := name + "~" + strconv.Itoa(i) + "."
	crc := rdb.TagCRC(prefix)
	var buf [20]byte
	for j := 0; ; j++ {
		d := strconv.AppendInt(buf[:0], int64(j), 10)
		if s := int(rdb.CRC16(crc, d)) % rdb.ClusterSlots; s >= lo && s < hi {
			return prefix + string(d)
		}
	}
}

// parsePartitions reads a partition table (an HGETALL reply as a flat list
// or a map) of the queue name. Everything in it is checked: it is data
// from Redis. A table redisq wrote holds exactly n, v and p0 … p(n-1), and
// version 1 names its partitions PartitionLayout(name, n): a count changed
// by hand leaves fields past it, or names of another count, and a renamed
// or swapped partition is not the layout's.
func parsePartitions(name string, fields map[string]string) ([]string, error) {
	bad := func(why string) error {
		return fmt.Errorf("%w %s of partitioned queue %q: %s", ErrBadPartitionTable, partitionsKey(name), name, why)
	}
	n, err := strconv.Atoi(fields["n"])
	if err != nil || n < 1 || n > MaxPartitions {
		return nil, bad(fmt.Sprintf("partition count %q", fields["n"]))
	}
	if v := fields["v"]; v != "1" {
		return nil, bad(fmt.Sprintf("layout version %q (this redisq knows 1)", v))
	}
	own := map[string]bool{"n": true, "v": true}
	for i := range n {
		own["p"+strconv.Itoa(i)] = true
	}
	var extra []string
	for f := range fields {
		if !own[f] {
			extra = append(extra, f)
		}
	}
	if len(extra) > 0 {
		slices.Sort(extra)
		return nil, bad(fmt.Sprintf("fields %q beyond its %d partitions", extra, n))
	}
	names := PartitionLayout(name, n)
	for i, want := range names {
		if s, ok := fields["p"+strconv.Itoa(i)]; !ok || s != want {
			return nil, bad(fmt.Sprintf("partition %d named %q, not %q (layout 1 of %d partitions)", i, s, want, n))
		}
	}
	return names, nil
}

// largerLayout returns an error wrapping ErrBadPartitionTable when a
// partition of name with more than n partitions holds data: the table's
// count was lowered, or the table was lost and created again with fewer
// partitions while the old ones keep their items. Partition n exists in
// every larger layout, so its names there are all that is read: one EXISTS
// of the sequence key of each (a few dozen, at most MaxPartitions-n),
// pipelined. A key the server refuses to show (an ACL user allowed only
// some keys) is no evidence.
func largerLayout(ctx context.Context, c redis.UniversalClient, name string, n int) error {
	var cands []string
	seen := map[string]bool{}
	for p := n + 1; p <= MaxPartitions; p++ {
		if s := layoutName(name, n, p); !seen[s] {
			seen[s] = true
			cands = append(cands, s)
		}
	}
	if len(cands) == 0 {
		return nil
	}
	ex, err := rdb.QueuesExist(ctx, c, cands)
	if err != nil {
		return err
	}
	for i, e := range ex {
		if e.Exists {
			return fmt.Errorf("%w %s of partitioned queue %q: it says %d partitions, but %q, partition %d of a larger count, holds data",
				ErrBadPartitionTable, partitionsKey(name), name, n, cands[i], n)
		}
	}
	return nil
}

// NewPartitioned returns the partitioned queue name with partitions
// partitions (1..MaxPartitions) on client, creating its partition table if
// the queue is new. name must be a valid queue name (non-empty, no '{' or
// '}') not used by an ordinary queue. opts apply to every partition, as New
// applies them (WithoutRegistry also keeps name out of
// PartitionedRegistryKey). It checks that no partition of a larger count
// holds data (a few dozen EXISTS, pipelined; see PartitionNames), runs one
// script that creates or reads the partition table, then New for every
// partition concurrently (each a CONFIG GET, a script and an SADD, see
// New), then one SADD of name to PartitionedRegistryKey (best effort, as
// New's). It returns an error wrapping ErrPartitions when the queue exists
// with another partition count, an error for a bad name, count or option,
// for an ordinary queue of that name, one wrapping ErrBadPartitionTable for
// a bad partition table or one of fewer partitions than hold data (then
// nothing is created), or what New returns for a partition. The caller keeps ownership of client; Close does not close it.
func NewPartitioned(ctx context.Context, client redis.UniversalClient, name string, partitions int, opts ...Option) (*Partitioned, error) {
	if partitions < 1 || partitions > MaxPartitions {
		return nil, fmt.Errorf("redisq: partition count %d not in 1..%d", partitions, MaxPartitions)
	}
	return openPartitioned(ctx, client, name, partitions, opts)
}

// OpenPartitioned is NewPartitioned for a queue that exists, with the
// partition count it was created with: it reads the partition table and
// creates nothing but the partitions' Queue values (tools such as dqctl
// use it with WithoutRegistry). It returns ErrNoQueue when name has no
// partition table, and otherwise what NewPartitioned returns.
func OpenPartitioned(ctx context.Context, client redis.UniversalClient, name string, opts ...Option) (*Partitioned, error) {
	return openPartitioned(ctx, client, name, 0, opts)
}

// openPartitioned opens name, creating it with partitions partitions
// unless partitions is 0.
func openPartitioned(ctx context.Context, client redis.UniversalClient, name string, partitions int, opts []Option) (*Partitioned, error) {
	if client == nil {
		return nil, errors.New("redisq: nil client")
	}
	if !validName(name) {
		return nil, fmt.Errorf("redisq: bad queue name %q", name)
	}
	o := defaultOptions()
	for _, f := range opts {
		if err := f(&o); err != nil {
			return nil, err
		}
	}
	meta := partitionsKey(name)
	var names []string
	var err error
	if partitions == 0 {
		names, err = PartitionNames(ctx, client, name)
	} else {
		names, err = createPartitions(ctx, client, name, partitions)
	}
	if err != nil {
		return nil, err
	}
	p := &Partitioned{
		client: client,
		name:   name,
		parts:  make([]*Queue, len(names)),
		index:  make(map[string]int, len(names)),
		meta:   meta,
		opt:    o,
	}
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, n := range names {
		p.index[n] = i
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.parts[i], errs[i] = New(ctx, client, n, opts...)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, q := range p.parts {
			if q != nil {
				_ = q.Close()
			}
		}
		return nil, fmt.Errorf("redisq: partitioned queue %q: %w", name, err)
	}
	p.register(ctx)
	for _, q := range p.parts {
		q.onNewLife = p.renew
	}
	p.tk = newTaker(p.parts, o.logger)
	p.acks = make([]*groupCommit[*ackReq], len(p.parts))
	for i, q := range p.parts {
		p.acks[i] = newAcks(q)
	}
	return p, nil
}

// register adds the name to PartitionedRegistryKey (one SADD, best effort
// as New's; not with WithoutRegistry).
func (p *Partitioned) register(ctx context.Context) {
	if p.opt.noRegistry {
		return
	}
	if err := rdb.Register(ctx, p.client, PartitionedRegistryKey, p.name); err != nil {
		p.opt.logger.Debug("redisq: partitioned queue not added to the registry", "key", PartitionedRegistryKey, "err", err)
	}
}

// renew runs when a call of a partition starts its sequence: the first
// write of the partition, or of its new life after Destroy, which deleted
// the partition table and took the name out of PartitionedRegistryKey. It
// stores the table again unless one exists (the script NewPartitioned
// runs) and registers the name, once per partition's life, best effort: a
// table that names other partitions, or an ordinary queue of the name, is
// logged and left as it is.
func (p *Partitioned) renew(ctx context.Context) {
	names := make([]string, len(p.parts))
	for i, q := range p.parts {
		names[i] = q.Name()
	}
	table, ordinary, err := rdb.Partitions(ctx, p.client, p.name, names)
	switch {
	case err != nil:
		p.opt.logger.Debug("redisq: partition table not stored again", "queue", p.name, "err", err)
	case ordinary:
		p.opt.logger.Warn("redisq: partitioned queue written after an ordinary queue took its name", "queue", p.name)
	default:
		if got, err := parsePartitions(p.name, table); err != nil || !slices.Equal(got, names) {
			p.opt.logger.Warn("redisq: partitioned queue written after its table changed", "queue", p.name, "table", got, "err", err)
		}
	}
	p.register(ctx)
}

func createPartitions(ctx context.Context, client redis.UniversalClient, name string, partitions int) ([]string, error) {
	// Checked before the table is created, so that a refusal changes
	// nothing; a table of another count is the better report.
	if err := largerLayout(ctx, client, name, partitions); err != nil {
		f, herr := rdb.PartitionTable(ctx, client, name)
		if herr == nil && len(f) > 0 {
			if names, perr := parsePartitions(name, f); perr != nil || len(names) != partitions {
				return nil, partitionCountError(name, names, perr, partitions)
			}
		}
		return nil, err
	}
	table, ordinary, err := rdb.Partitions(ctx, client, name, PartitionLayout(name, partitions))
	if err != nil {
		return nil, fmt.Errorf("redisq: partitioned queue %q: %w", name, err)
	}
	if ordinary {
		return nil, fmt.Errorf("redisq: %q is an ordinary queue (its key %s exists), not a partitioned one", name, rdb.SeqKey(name))
	}
	names, err := parsePartitions(name, table)
	if err != nil || len(names) != partitions {
		return nil, partitionCountError(name, names, err, partitions)
	}
	return names, nil
}

// partitionCountError is createPartitions' error for a stored table that
// is bad (err) or has another count than partitions.
func partitionCountError(name string, names []string, err error, partitions int) error {
	if err != nil {
		return err
	}
	return fmt.Errorf("%w: queue %q has %d partitions, not %d", ErrPartitions, name, len(names), partitions)
}

// PartitionNames returns the names of the partitions of the partitioned
// queue name, in partition order, as its partition table stores them. It
// reads the table (one HGETALL) and checks that no partition of a larger
// count holds data (a few dozen EXISTS, pipelined; see largerLayout). It
// returns ErrNoQueue when there is no such table, an error wrapping
// ErrBadPartitionTable for a table redisq did not write (fields past its
// count, a partition not named by the layout) or whose count is lower than
// the data's, an error for a bad name, or a Redis/context error.
func PartitionNames(ctx context.Context, c redis.UniversalClient, name string) ([]string, error) {
	if !validName(name) {
		return nil, fmt.Errorf("redisq: bad queue name %q", name)
	}
	f, err := rdb.PartitionTable(ctx, c, name)
	if err != nil {
		return nil, err
	}
	if len(f) == 0 {
		return nil, ErrNoQueue
	}
	names, err := parsePartitions(name, f)
	if err != nil {
		return nil, err
	}
	if err := largerLayout(ctx, c, name, len(names)); err != nil {
		return nil, err
	}
	return names, nil
}

// Name returns the queue name.
func (p *Partitioned) Name() string { return p.name }

// NumPartitions returns the partition count P.
func (p *Partitioned) NumPartitions() int { return len(p.parts) }

// Partition returns partition i (0 <= i < P) as the ordinary Queue it is,
// for the per-partition view of any call. It panics on a bad i.
func (p *Partitioned) Partition(i int) *Queue {
	if i < 0 || i >= len(p.parts) {
		panic(fmt.Sprintf("redisq: partition %d of %d", i, len(p.parts)))
	}
	return p.parts[i]
}

// PartitionOf returns the partition of key: FNV-1a (32-bit) of its bytes
// modulo P. This is part of the stored data's format and never changes.
func (p *Partitioned) PartitionOf(key string) int {
	h := uint32(2166136261)
	for i := 0; i < len(key); i++ {
		h ^= uint32(key[i])
		h *= 16777619
	}
	return int(h % uint32(len(p.parts)))
}

// Route returns the partition Queue of the ordering key key. Enqueue items
// that must stay in FIFO order among themselves (equal due times delivered
// in enqueue order, one partition's due order) through the Queue of their
// common key. Partitioned's own calls by id find them too (see byID), at
// the cost of looking in every partition once the id's own has no such
// item; addressing them through the key's Queue costs one round trip.
func (p *Partitioned) Route(key string) *Queue { return p.parts[p.PartitionOf(key)] }

// PartitionOfMessage returns the partition that m was taken from, or -1
// when m is nil or from no partition of this queue.
func (p *Partitioned) PartitionOfMessage(m *Message) int {
	if m == nil {
		return -1
	}
	i, ok := p.index[m.QueueName()]
	if !ok {
		return -1
	}
	return i
}

// Enqueue is Queue.Enqueue on the partition of id.
func (p *Partitioned) Enqueue(ctx context.Context, id string, payload []byte, at time.Time) error {
	return p.Route(id).Enqueue(ctx, id, payload, at)
}

// EnqueueAfter is Queue.EnqueueAfter on the partition of id.
func (p *Partitioned) EnqueueAfter(ctx context.Context, id string, payload []byte, delay time.Duration) (time.Time, error) {
	return p.Route(id).EnqueueAfter(ctx, id, payload, delay)
}

// Schedule is Queue.Schedule on the partition of id.
func (p *Partitioned) Schedule(ctx context.Context, id string, payload []byte, at time.Time) (ScheduleResult, error) {
	return p.Route(id).Schedule(ctx, id, payload, at)
}

// ScheduleAfter is Queue.ScheduleAfter on the partition of id.
func (p *Partitioned) ScheduleAfter(ctx context.Context, id string, payload []byte, delay time.Duration) (ScheduleResult, error) {
	return p.Route(id).ScheduleAfter(ctx, id, payload, delay)
}

// Add is Queue.Add on the partition of the item: its limit key's or its
// unique key's when its Job has one (so that the key's limits and window
// are exact), else its id's. An id is unique within its partition: keep
// an item's keys the same across its enqueues, or it can exist twice.
func (p *Partitioned) Add(ctx context.Context, it EnqueueItem) (time.Time, error) {
	k, err := p.partitionOfItem(it)
	if err != nil {
		return time.Time{}, err
	}
	return p.parts[k].Add(ctx, it)
}

// ScheduleItem is Queue.ScheduleItem on the partition of the item (see
// Add).
func (p *Partitioned) ScheduleItem(ctx context.Context, it EnqueueItem) (ScheduleResult, error) {
	k, err := p.partitionOfItem(it)
	if err != nil {
		return ScheduleResult{}, err
	}
	return p.parts[k].ScheduleItem(ctx, it)
}

// Cancel is Queue.Cancel on the partition that holds id (see byID).
func (p *Partitioned) Cancel(ctx context.Context, id string) (CancelOutcome, error) {
	return byID(p, id, func(q *Queue) (CancelOutcome, error) { return q.Cancel(ctx, id) })
}

// Reschedule is Queue.Reschedule on the partition that holds id.
func (p *Partitioned) Reschedule(ctx context.Context, id string, at time.Time) error {
	_, err := byID(p, id, func(q *Queue) (struct{}, error) { return struct{}{}, q.Reschedule(ctx, id, at) })
	return err
}

// RescheduleAfter is Queue.RescheduleAfter on the partition that holds id.
func (p *Partitioned) RescheduleAfter(ctx context.Context, id string, delay time.Duration) (time.Time, error) {
	return byID(p, id, func(q *Queue) (time.Time, error) { return q.RescheduleAfter(ctx, id, delay) })
}

// Get is Queue.Get on the partition that holds id.
func (p *Partitioned) Get(ctx context.Context, id string) (Item, error) {
	return byID(p, id, func(q *Queue) (Item, error) { return q.Get(ctx, id) })
}

// GetPrefix is Queue.GetPrefix on the partition that holds id.
func (p *Partitioned) GetPrefix(ctx context.Context, id string, max int) (Item, error) {
	return byID(p, id, func(q *Queue) (Item, error) { return q.GetPrefix(ctx, id, max) })
}

// RequeueDead is Queue.RequeueDead on the partition that holds id.
func (p *Partitioned) RequeueDead(ctx context.Context, id string) error {
	_, err := byID(p, id, func(q *Queue) (struct{}, error) { return struct{}{}, q.RequeueDead(ctx, id) })
	return err
}

// DeleteDead is Queue.DeleteDead on the partition that holds id.
func (p *Partitioned) DeleteDead(ctx context.Context, id string) error {
	_, err := byID(p, id, func(q *Queue) (struct{}, error) { return struct{}{}, q.DeleteDead(ctx, id) })
	return err
}

// Locate returns the partitions that hold the item id, in partition
// order, for an item enqueued under an ordering key that is not at hand:
// one GetPrefix(id, 0) per partition (O(log n), no payload read), run
// concurrently. It returns ErrNotFound when no partition holds id, or the
// first Redis/context error (with the partitions found so far).
func (p *Partitioned) Locate(ctx context.Context, id string) ([]int, error) {
	found := make([]bool, len(p.parts))
	err := p.each(func(i int, q *Queue) error {
		_, err := q.GetPrefix(ctx, id, 0)
		if errors.Is(err, ErrNotFound) {
			return nil
		}
		found[i] = err == nil
		return err
	})
	var at []int
	for i, f := range found {
		if f {
			at = append(at, i)
		}
	}
	if err == nil && len(at) == 0 {
		err = ErrNotFound
	}
	return at, err
}

// EnqueueMany is Queue.EnqueueMany with every item on its partition (see
// Add): the items of each partition are sent as one EnqueueMany, in slice
// order, and the partitions concurrently (one round trip each, at the same
// time). It returns one result per item, in order, and the error of the
// earliest item whose round trip failed (nil when every item got an
// answer). An empty id anywhere returns an error before anything is sent;
// ErrClosed after Close.
func (p *Partitioned) EnqueueMany(ctx context.Context, items []EnqueueItem) ([]EnqueueResult, error) {
	for i := range items {
		if err := checkID(items[i].ID); err != nil {
			return nil, err
		}
		if err := items[i].Job.check(); err != nil {
			return nil, err
		}
	}
	byPart := make([][]int, len(p.parts))
	for i, it := range items {
		k, err := p.partitionOfItem(it)
		if err != nil {
			return nil, err
		}
		byPart[k] = append(byPart[k], i)
	}
	res := make([]EnqueueResult, len(items))
	err := p.each(func(k int, q *Queue) error {
		if len(byPart[k]) == 0 {
			return nil
		}
		its := make([]EnqueueItem, len(byPart[k]))
		for j, i := range byPart[k] {
			its[j] = items[i]
		}
		r, err := q.EnqueueMany(ctx, its)
		if r == nil && err != nil {
			for _, i := range byPart[k] {
				res[i].Err = err
			}
			return nil
		}
		for j, i := range byPart[k] {
			res[i] = r[j]
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, r := range res {
		if r.Err != nil && !errors.Is(r.Err, ErrDuplicate) {
			return res, r.Err
		}
	}
	return res, nil
}

// each runs fn for every partition concurrently and returns the error of
// the lowest partition that failed, naming it.
func (p *Partitioned) each(fn func(i int, q *Queue) error) error {
	errs := make([]error, len(p.parts))
	var wg sync.WaitGroup
	for i, q := range p.parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = fn(i, q)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return fmt.Errorf("redisq: partition %q: %w", p.parts[i].Name(), err)
		}
	}
	return nil
}

// Close stops taking: Take calls in progress return ErrClosed, the
// partitions' waits end, the items claimed and not yet handed out are
// released (Message.Release: back to their schedule, no attempt counted),
// and every partition's Queue is closed; Close returns when all that is
// done (the acks of AckTake calls under way are sent by those calls). Messages already handed out can still be
// settled. Later calls behave as Queue's after Close. It always returns
// nil and is idempotent.
func (p *Partitioned) Close() error {
	p.closeOnce.Do(func() {
		p.tk.close()
		for _, q := range p.parts {
			_ = q.Close()
		}
	})
	return nil
}
