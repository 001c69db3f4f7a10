// Package redisq is a durable, multi-process delay queue on Redis, the
// Redis backend of github.com/dq-go/delayqueue. It lives in its own module so
// that the core keeps zero dependencies.
//
// Any number of processes share a queue by name. Producers Enqueue items (an
// id and a []byte payload) due at a time; consumers Take them when due, then
// Ack (done), Nack (retry later) or Extend (need more time). Delivery is
// at-least-once: an item whose consumer dies is redelivered when its lease
// (the visibility timeout) expires, with Attempts incremented, and the dead
// consumer's late Ack is rejected with ErrLeaseLost.
//
// # Design
//
// Every state change is one Lua script (EVALSHA through redis.Script, with
// EVAL fallback on NOSCRIPT, e.g. after a restart; the pipelined chunks of
// EnqueueMany and AckMany are sent as EVAL, applied in order) over keys
// that share the hash tag {dq:NAME}, so the queue works on a single node,
// behind Sentinel and on Cluster (one slot per queue):
//
//	{dq:NAME}:sched  zset  member -> due time (ms)
//	{dq:NAME}:lease  zset  member -> lease deadline (ms)
//	{dq:NAME}:dead   zset  member -> time of death (ms)
//	{dq:NAME}:m:ID   hash  p (payload), due, att (deliveries), st (s/l/d),
//	                       mem (its zset member), tok (lease token), dl
//	                       (lease deadline), can (cancelled in flight), enq,
//	                       why (dead items: the reason)
//	{dq:NAME}:wake   zset  wake marker, member "w"
//	{dq:NAME}:timer  string with TTL: which Queue owns the next-due timer
//	                       ("ID|deadline ms")
//	{dq:NAME}:stats  hash  counters
//	{dq:NAME}:late   hash  lateness histogram of deliveries (fixed buckets)
//	{dq:NAME}:seq    hash  sequence of members: n the last number taken
//	                       (a member's number is also the token of its
//	                       lease), s0 where it started (Redis TIME in
//	                       microseconds, so a queue destroyed and created
//	                       again never reuses a token), r the numbers taken
//	                       by requeues; n - s0 - r is Stats' Enqueued
//	{dq:NAME}:w:...  short-lived private wake keys of blocked waiters
//
// Zset members are "%016d"-style zero-padded sequence numbers, ":" and the
// id. Redis orders equal scores by member, so the sequence keeps FIFO among
// equal due times without squeezing a tie-breaker into the float score (a
// millisecond timestamp already uses 41 of its 53 bits). Payloads live only
// in the item hash. The member is stored in the hash, so Cancel and
// Reschedule are O(log n) in every state.
//
// Time is always redis.call('TIME') inside the script (Redis 7 replicates
// scripts by effects), never the client clock; EnqueueAfter,
// RescheduleAfter, NackAfter and the backoff add their delay to it in
// microseconds and round the sum up to the millisecond of the score, so an
// item is never due before TIME at the call + delay. Enqueue with an
// absolute time is the caller's explicit choice of clock (rounded up to the
// millisecond; times beyond the 2^53-1 ms the scripts compute exactly are
// clamped, see Enqueue).
//
// The claim script first returns up to a bounded batch of expired leases to
// sched (after backoff) or to dead (after max attempts; or deletes them if
// cancelled in flight), then moves up to n due items to lease with a fresh
// token (from the sequence) and deadline now+visibility. Ack, Nack and Extend
// check the token and that the deadline has not passed by the Redis clock.
//
// # Bounded scripts
//
// Redis runs one script at a time, so a long script delays every client. No
// script scans. A claim script handles at most 100 expired leases and leases
// at most 100 items, whatever it is asked (WithReclaimBatch allows at most
// 100; TakeBatch with a larger n runs several claims back to back): about
// 2-3ms of server CPU on a small VM, and the tests fail if the worst case
// takes over 10ms. EnqueueMany and AckMany send one script per 200 items
// (EnqueueMany also per 64 KiB of ids and payloads, a larger item alone),
// the batch admin calls one per 200 items, and a List page with payloads
// ends after the item that brings them to 1 MiB; all stay under 10ms.
// Every other script handles one item, O(log n). An item's own cost grows
// with its payload, which a script copies once.
//
// # Inspection and administration
//
// List, Get, DueHistogram and Stats read a queue without changing it; each
// is one script call of bounded cost (a page, one item, a bucket count), so
// they are safe on a live queue. RequeueDead, DeleteDead, Cancel and
// Schedule change one item atomically; RequeueAllDead, DeleteAllDead and
// Purge work in atomic batches of 200 items; Destroy removes the
// items in such batches and then every other key of the queue, found by
// SCAN (on a Cluster, in the queue's slot only). Every step keeps the invariants Audit checks. ListQueues lists the
// registered queues (the set {dq}:queues, which New and a queue's first
// write after Destroy fill) that have data,
// at a cost that grows with the number of queues, not keys; ScanQueues
// finds every queue by SCANning the whole keyspace, and a QueueScanner does
// the same a bounded number of keys per call and registers what it finds.
//
// # Waiting without polling
//
// Consumers block in BZPOPMIN on the wake marker. Enqueue and Reschedule
// that create a new head of sched, Nack that does, and a claim that leaves due
// items behind (unless the claimer's Queue watches for them, below), ZADD
// the marker: one blocked consumer pops it and claims; the rest keep
// waiting. Waiting for a future due time is coordinated through the timer
// key: a claim that finds the head in the future gives the timer to the
// claimer's Queue (SET PX until due), one of whose Takes waits until then;
// the others wait on the marker for up to the wake cap. A consumer that got
// work keeps the timer for its Queue: coming back to Take before the
// deadline, it waits for it without claiming first, and if no Take of that
// Queue claims by 1ms past it, a local watch re-arms the marker so another
// waiter claims. Close gives the timer up and re-arms the marker; a waiter
// that popped the marker and leaves Take before claiming puts the marker
// back. This avoids a thundering herd of all consumers at every due time,
// and at a steady rate each item costs one claim.
//
// Redis only checks blocked clients' timeouts once per event-loop pass
// (every 100ms at the default hz 10 on an idle server), so the timer owner
// does not rely on the BZPOPMIN timeout to wake on time: a local timer pushes
// a marker to the waiter's private key at the due instant (the duration
// comes from Redis; the following claim still decides by Redis TIME). The
// same private key makes ctx cancellation and Close end a blocked wait at
// once, even with clients that do not honour context deadlines
// (ContextTimeoutEnabled false, the go-redis default).
//
// Waits for a known due time of at most 25ms are plain local sleeps with no
// Redis command: under steady load they are the common case, and the
// BZPOPMIN and the push that ends it are both writes (with appendfsync
// always, each waits for an fsync before its reply).
//
// A lost wake-up (a consumer that popped the marker and died, a timer owner
// that died) costs at most the wake cap, never an item. go-redis truncates
// BZPopMin's timeout to whole seconds, so waits under a second are sent with
// Do and a fractional timeout, which relies on the client's ReadTimeout
// (default 3s; New keeps such waits under half of a shorter ReadTimeout);
// waits of a second or more use BZPopMin, for which go-redis extends the read
// deadline by the timeout.
//
// # Durability
//
// Durability is the server's: with appendonly yes and appendfsync always, an
// acknowledged Enqueue or Ack survives a crash of redis-server. New checks
// that maxmemory-policy is noeviction (an evicting server may drop queue
// keys) and fails (or warns, see WithEvictionCheck), on the server or, on a
// Cluster, on the master of the queue's slot and its replicas; where CONFIG
// is disabled it logs a note and skips the check.
//
// Replication is asynchronous: a write acknowledged in the moment before a
// master dies can be missing on the replica that takes over (an enqueue
// lost, an ack undone and its item delivered again). WithReplicaAcks makes
// every acknowledging write wait until n replicas have it (WAIT, in the same
// round trip), or fail with ErrNotReplicated: tested by killing a master
// whose replica was frozen for 300 ms, under load, on a local Cluster: 0
// acknowledged enqueues lost and 0 acks undone with it (146 and 167 without
// it). The wait costs throughput: 16-46% of the acks a second of 4
// producers and 4 AckTake consumers on the development VM
// (TestClusterReplicaAcksCost, which runs with REDISQ_CAPACITY=1). Writes
// stop while fewer than n replicas are connected: run n+1 replicas per
// master.
//
// # Redis Cluster
//
// A queue lives in one slot (its hash tag {dq:NAME}); every call goes to the
// master of that slot. Each script declares in KEYS exactly the keys the call
// touches and knows in advance (see scripts.go), and reads every key it
// finds while running (an item hash behind a zset member) before its first
// write, so that a key that has already moved to another node stops the
// script before it changed anything. While the slot migrates, a call whose
// keys are split between the two nodes, or absent from the node it reached
// (a new item, a tombstone), is refused (TRYAGAIN, ASK) or stopped there;
// redisq retries it with a backoff of 5 to 250 ms for up to
// WithMigrationWait (30 s), so the queue's producers and consumers pause
// while its slot moves instead of failing: on the development VM, moving a
// slot of 4,000 keys (MIGRATE in batches of 10, as redis-cli --cluster
// reshard does) under 2,000 enqueues a second took 0.1-0.15 s, no call
// failed and the longest Enqueue took 0.12-0.18 s (TestClusterSlotMigrationUnderLoad).
// The pause grows with the number of keys in the slot: one per item, one
// ack tombstone per ack of the last 30 s (60,000 at 2,000 acks a second),
// plus a few. A move longer than the visibility timeout lets leases expire
// meanwhile: an Ack then returns ErrLeaseLost and the item is delivered
// again, as after any expired lease. Destroy and Audit read only the queue's slot, on its
// master (CLUSTER GETKEYSINSLOT), never the other masters; Audit lists at
// most 10,000 keys of it, and in a larger slot checks the items its zsets
// name (see Audit).
package redisq
