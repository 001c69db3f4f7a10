// Package dqprom exports the statistics of delay queues as Prometheus
// metrics, through collectors for github.com/prometheus/client_golang: one
// for in-process queues of github.com/dq-go/delayqueue (NewQueueCollector)
// and one for Redis-backed queues of github.com/dq-go/delayqueue/redisq
// (NewRedisCollector, NewRedisServerCollector). It is a module of its own,
// so that neither the core nor redisq depends on client_golang.
//
// Every metric but redisq_discovery_error has a "queue" label; names
// follow the Prometheus conventions (counters end in _total, durations are
// in seconds).
//
// In-process queues (namespace delayqueue), read from the queue's Stats at
// every scrape:
//
//	delayqueue_items                  gauge      items queued now
//	delayqueue_waiting_takers         gauge      goroutines blocked in Take/TakeBatch
//	delayqueue_blocked_puts           gauge      goroutines blocked in Put, waiting for room in a bounded queue
//	delayqueue_offered_total          counter    items accepted by Offer/OfferAfter/Put
//	delayqueue_taken_total            counter    items handed out by Take/TakeBatch/Poll/DrainExpired
//	delayqueue_removed_total          counter    items removed by Remove (Keyed: Cancel)
//	delayqueue_drained_total          counter    items returned by Drain/DrainEntries/Shutdown
//	delayqueue_rescheduled_total      counter    Reschedules, and Keyed replacements of a queued key
//	delayqueue_wakeups_total          counter    resumptions of goroutines blocked in Take/TakeBatch
//	delayqueue_lateness_seconds       histogram  how late items were handed out (Stats().Lateness; sum estimated from bucket midpoints)
//
// Redis-backed queues (namespace redisq), read with one Stats call (one
// script, O(log n)) per queue at every scrape:
//
//	redisq_up                         gauge    1 if the queue's stats were read at this scrape
//	redisq_scrape_error{error}        gauge    1 while the queue's stats cannot be read, and why
//	redisq_discovery_error{error}     gauge    1 for each problem finding the queues that did not fail the scrape (no queue label)
//	redisq_queue_paused               gauge    1 while the queue is paused (redisq Queue.Pause), else 0
//	redisq_queue_rate_limit_claims    gauge    the queue's own rate limit (redisq Queue.SetQueueRateLimit), while set: claims per period,
//	redisq_queue_rate_limit_period_seconds  gauge  its period,
//	redisq_queue_rate_limit_used_claims     gauge  the claims in the period that ends now, of any limit key
//	redisq_rate_limit_claims{key}     gauge    a limit key's rate limit (redisq Queue.SetRateLimit): claims per period,
//	redisq_rate_limit_period_seconds{key}  gauge  its period,
//	redisq_rate_limit_used_claims{key}     gauge  the claims in the period that ends now,
//	redisq_rate_limit_waiting_items{key}   gauge  the items waiting for a slot (the LimitSeries busiest keys, see Limits)
//	redisq_rate_limit_keys            gauge    the queue's rate-limited keys
//	redisq_rate_limit_omitted_keys    gauge    those with no series of their own
//	redisq_rate_limit_omitted_waiting_items  gauge  the items waiting under them (of those read)
//	redisq_rate_limit_unread_keys     gauge    the keys the scrape did not read (past WithLimitScan)
//	redisq_concurrency_limit_items{key}    gauge  a limit key's concurrency limit (redisq Queue.SetConcurrencyLimit),
//	redisq_concurrency_leased_items{key}   gauge  its items leased now,
//	redisq_concurrency_waiting_items{key}  gauge  its items waiting for a place (the LimitSeries busiest keys)
//	redisq_concurrency_limit_keys, redisq_concurrency_limit_omitted_keys,
//	redisq_concurrency_limit_omitted_waiting_items, redisq_concurrency_limit_unread_keys
//	                                  gauges   as the rate limits' four
//	redisq_partitioned_partitions     gauge    a partitioned queue's partition count (server-wide collector)
//	redisq_partition_info{partitioned,partition}  gauge  1 for each queue that is a partition: join on queue
//	                                           to sum the partitions by partitioned queue
//	redisq_items{state}               gauge    items per state: scheduled, inflight, dead, completed
//	redisq_due_items                  gauge    scheduled items already due (the backlog)
//	redisq_oldest_overdue_seconds     gauge    how long the earliest due item has waited
//	redisq_enqueued_total             counter  new items
//	redisq_delivered_total            counter  leases granted (redeliveries included)
//	redisq_acked_total                counter  items acked
//	redisq_nacked_total               counter  leases given back by Nack
//	redisq_expired_total              counter  leases that timed out and were retried
//	redisq_dead_lettered_total        counter  items moved to the dead set
//	redisq_cancelled_total            counter  items cancelled
//	redisq_rescheduled_total          counter  items rescheduled or replaced by Schedule
//	redisq_requeued_total             counter  dead items requeued
//	redisq_deleted_total              counter  items deleted by the admin calls
//	redisq_skipped_total              counter  recurring occurrences skipped by Overlap or CatchUpWindow
//	redisq_snoozed_total              counter  leases given back by Snooze (no attempt counted, not a failure)
//	redisq_delivery_lateness_seconds  histogram  claim time - due time, by Redis TIME
//
// The redisq counters and the lateness histogram are kept in Redis, so
// every process's work is in them, and any one exporter reports the whole
// queue.
//
// # Labels
//
// The "queue" label is QueueLabel(name): the name itself when it is
// printable UTF-8 without a backslash and at most MaxLabelLen (256) bytes;
// otherwise escaped (ÿ for a byte that is not UTF-8, ‮ for a
// control or formatting character, \ for a backslash) and, beyond 256
// bytes, cut and ended with "…\#" and 64 bits of the name's SHA-256. No
// name can fail or crash a scrape, and two names never share a label (a
// hash collision, checked at every scrape, leaves the second queue out
// with a redisq_discovery_error).
//
// # Limits
//
// A queue may have a limit per tenant, thousands of keys: a scrape
// reports a series per key for the LimitSeries (100) keys of each kind
// with the most waiting items, then, if fewer have any, idle keys by key
// (redisq Queue.TopRateLimits, TopConcurrencyLimits), so a tenant whose
// items wait has a series whatever its name. The series per queue cover
// the rest: redisq_rate_limit_keys counts the keys set,
// redisq_rate_limit_omitted_keys those without a series (keys minus
// series), redisq_rate_limit_omitted_waiting_items the items waiting under
// them, and redisq_rate_limit_unread_keys the keys past WithLimitScan
// (default DefaultLimitScan, 10,000) whose waiting items the scrape did
// not count: their items are in no series, so alert on it being above 0
// (raise the bound) as on redisq_rate_limit_omitted_waiting_items > 0
// (items wait under keys with no series). The concurrency limits have the
// same four, named redisq_concurrency_limit_*.
//
// The queue's own rate limit (redisq Queue.SetQueueRateLimit: every claim
// counts, whatever its item's limit key) has no key label:
// redisq_queue_rate_limit_claims and _period_seconds are the limit and
// redisq_queue_rate_limit_used_claims its claims in the period that ends
// now. While it is used up no item is claimed, and none waits for a slot:
// the due items stay due, in order, in redisq_due_items. It is read (one
// round trip) only when the queue's Stats say it is set; a partitioned queue
// has none of its own, and a partition's is reported under the
// partition's queue label.
//
// Reading them costs each scrape of a queue with limits, per kind, two
// round trips per 500 keys read (an HSCAN page and a script of one ZCARD
// per waiting zset) and one per 50 keys reported (their state): at most
// 2*(ceil(n/500)+1)+2 for n = WithLimitScan, 44 by default, whatever the
// number of keys, none taking Redis 1 ms on an idle machine. A queue
// without limits costs nothing more than its Stats (they count the
// limits, and hold the queue's own rate limit). BenchmarkScrapeLimits
// measures a queue of 5,000 keys of each kind (go test -run '^$' -bench
// ScrapeLimits ./dqprom): on the 2-CPU VM with one CPU kept busy, a
// scrape takes 30 ms, 15 ms of it Redis time, where reading every key's
// state took 86 ms and 53 ms; SLOWLOG entries over 1 ms, 2.1 a scrape
// then, are 0.7 to 1.1 now, all of them on the shared CPU (a single ZCARD
// took 5 ms there).
//
// # Failures
//
// A queue whose stats cannot be read (a Redis error such as an ACL user
// without EVALSHA, a timeout, an unreachable server) reports redisq_up 0
// and redisq_scrape_error{queue,error} 1 with the error, and the other
// queues are reported as usual: the scrape succeeds, so alert on
// redisq_up == 0. A server-wide collector that cannot read the registry
// of queues fails the scrape (promhttp answers 500 with the reason under
// HTTPErrorOnError) and reports the queues it knew redisq_up 0; a failed
// SCAN for unregistered queues only adds redisq_discovery_error{error} 1.
//
// # Cost
//
// A server-wide collector (NewRedisServerCollector) lists the queues from
// the registry redisq.RegistryKey (an SSCAN and one EXISTS per queue,
// pipelined) and SCANs at most WithScanKeys keys per node (default 5000:
// five SCAN commands) for queues missing from it, going on from where the
// previous scrape stopped; then one Stats script per queue, and for a
// queue with limits the reads of Limits above, bounded by WithLimitScan.
// None of it grows with the number of keys on the server. Collect calls that overlap
// share one reading of Redis, so concurrent scrapers do not multiply it.
package dqprom
