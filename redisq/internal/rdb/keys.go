package rdb

import "strconv"

// Keys names the keys of one queue. Every key of a queue named NAME
// carries the hash tag {dq:NAME}, so they live in one Cluster slot:
//
//	{dq:NAME}:sched    zset    member -> due time (ms)
//	{dq:NAME}:lease    zset    member -> lease deadline (ms)
//	{dq:NAME}:dead     zset    member -> time of death (ms)
//	{dq:NAME}:done     zset    member -> when a completed item expires (ms);
//	                           expires itself with its last member
//	{dq:NAME}:m:ID     hash    item ID: p payload, due, att (deliveries),
//	                           st (s/l/d/c), mem (its zset member), tok (lease
//	                           token), dl (lease deadline), can (cancelled in
//	                           flight), enq (first enqueued), why (dead
//	                           items: the reason), rq/rr (the last request
//	                           id and its reply), the job fields (k, j, ma,
//	                           bb, bx, ret, lk: see Job), wt (the rate slot
//	                           a scheduled item waits for, ms), and for
//	                           completed items fin (when acked) and res (the
//	                           result);
//	                           a completed item's hash expires with it
//	{dq:NAME}:wake     zset    the wake marker, member "w"
//	{dq:NAME}:timer    string  who owns the next-due timer ("ID|deadline
//	                           ms"), with a TTL
//	{dq:NAME}:stats    hash    counters
//	{dq:NAME}:late     hash    lateness histogram of deliveries (one field
//	                           per bucket, and sum)
//	{dq:NAME}:seq      hash    n the last sequence number taken (members
//	                           and lease tokens), s0 where it started (Redis
//	                           TIME in µs), r the numbers requeues took,
//	                           paused (when Pause paused it, ms), lim (how
//	                           many rate limits are set), cc (concurrency
//	                           limits), ql (the queue's own rate limit)
//	{dq:NAME}:a:TOKEN  string  an applied ack's tombstone (30 s)
//	{dq:NAME}:r:RID    string  the reply of a call that deleted its item (30 s)
//	{dq:NAME}:u:KEY    string  unique key KEY's window: the id of the item
//	                           whose enqueue took it; expires at its end
//	{dq:NAME}:w:...    zset/stream  a blocked waiter's or keeper's private
//	                           key (expires within 60 s)
//	{dq:NAME}:rec:REG  hash    registration REG: s schedule text, p payload,
//	                           cu catch-up, v version, g generation, ct/ut
//	                           created/updated, at watermark (latest
//	                           occurrence enqueued, ms), id its item, pv the
//	                           one before, end, rn the last extra run, sn
//	                           the last sighting, rq/rr; op the occurrence
//	                           policy, sk, ls, lw (see
//	                           lua/include/occ_read.lua)
//	{dq:NAME}:rn:REG   set     REG's occurrences running under Overlap
//	{dq:NAME}:recs     zset    registration names (score 0)
//	{dq:NAME}:recx     stream  change feed of the registrations (MAXLEN 100)
//	{dq:NAME}:workers  zset    worker id -> heartbeat expiry (ms)
//	{dq:NAME}:wk:ID    hash    worker ID's heartbeat: v, its beat time and
//	                           fields (see lua/beat.lua); expires with it
//	{dq:NAME}:parts    hash    a partitioned queue's table: n, v, p0...
//	{dq:NAME}:limits   hash    limit key -> its rate limit "N,PER µs"; the
//	                           keys rl:KEY, rw:KEY, rr:KEY and rx:KEY hold its use
//	                           (see lua/include/rate_read.lua)
//	{dq:NAME}:ql       zset    the claims of the queue's own rate limit
//	                           (the sequence's field ql "N,PER µs"): member
//	                           -> TIME µs, as rl:KEY (see lua/include/queue_rate_read.lua)
//	{dq:NAME}:conc     hash    limit key -> its concurrency limit K; the
//	                           keys cf:KEY, cq:KEY and cp:KEY hold its use (see
//	                           lua/include/conc_keys.lua)
//
// and, outside every queue's slot, RegistryKey and PartitionedRegistryKey.
//
// A zset member is a 16-digit zero-padded sequence number, ":" and the id;
// Redis orders equal scores by member, so the sequence keeps FIFO among
// equal due times. The member's number is also the token of its lease.
type Keys struct {
	Name   string
	Prefix string // "{dq:NAME}:"
	Items  string // "{dq:NAME}:m:", every script's ARGV[1]

	Sched, Lease, Dead, Done, Wake, Stats, Seq, Timer, Late string
	Parts, Recs, Recx, Workers, Limits, Conc, QueueRate     string
}

// QueueKeys returns the keys of the queue name.
func QueueKeys(name string) Keys {
	p := "{dq:" + name + "}:"
	return Keys{
		Name: name, Prefix: p, Items: p + "m:",
		Sched: p + "sched", Lease: p + "lease", Dead: p + "dead", Done: p + "done", Wake: p + "wake",
		Stats: p + "stats", Seq: p + "seq", Timer: p + "timer", Late: p + "late",
		Parts: p + "parts", Recs: p + "recs", Recx: p + "recx", Workers: p + "workers",
		Limits: p + "limits", Conc: p + "conc", QueueRate: p + "ql",
	}
}

// The keys named by an id: an item's hash, a lease's ack tombstone, a
// request's reply, a unique key's window, a registration's hash, a
// worker's heartbeat.
func (k *Keys) Item(id string) string      { return k.Items + id }
func (k *Keys) Tomb(token string) string   { return k.Prefix + "a:" + token }
func (k *Keys) Reply(rid string) string    { return k.Prefix + "r:" + rid }
func (k *Keys) Unique(key string) string   { return k.Prefix + "u:" + key }
func (k *Keys) Rec(name string) string     { return k.Prefix + "rec:" + name }
func (k *Keys) Worker(id string) string    { return k.Prefix + "wk:" + id }
func (k *Keys) Private(inst string) string { return k.Prefix + "w:" + inst + ":" }

// Private keys: PrivateKey(prefix, n) names the n-th private key of a
// Queue value whose prefix is Keys.Private(inst).
func PrivateKey(prefix, what string, n uint64) string {
	return prefix + what + strconv.FormatUint(n, 10)
}

// RegistryKey is the set of queue names on a server; its hash tag {dq} is
// no queue's.
const RegistryKey = "{dq}:queues"

// PartitionedRegistryKey is the set of partitioned queues' names.
const PartitionedRegistryKey = "{dq}:partitioned"

// SeqKey is the key whose existence makes name a queue (created by the
// first write, removed only by Destroy).
func SeqKey(name string) string { return "{dq:" + name + "}:seq" }

// PartitionsKey is the partition table of the partitioned queue name.
func PartitionsKey(name string) string { return "{dq:" + name + "}:parts" }

// key is one of a queue's fixed keys, which scripts declare by it.
type key int

const (
	kSched key = iota
	kLease
	kDead
	kWake
	kStats
	kSeq
	kTimer
	kLate
	kDone
)

func (k *Keys) fixed(f key) string {
	switch f {
	case kSched:
		return k.Sched
	case kLease:
		return k.Lease
	case kDead:
		return k.Dead
	case kWake:
		return k.Wake
	case kStats:
		return k.Stats
	case kSeq:
		return k.Seq
	case kTimer:
		return k.Timer
	case kDone:
		return k.Done
	}
	return k.Late
}
