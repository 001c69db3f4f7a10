// Package redisq is a durable delay queue and job runner on Redis, shared
// by any number of processes: the Redis backend of
// github.com/dq-go/delayqueue, in a module of its own so that the core
// keeps zero dependencies.
//
// A Queue is named; every process that opens the name shares it. Producers
// put in items (an id and a []byte payload) due at a time, consumers take
// them once due, never early by the Redis clock, and each item is
// delivered at least once: a taken message is leased, and redelivered if
// its consumer dies before it acks.
//
//	q, err := redisq.New(ctx, client, "emails")
//	_, err = q.EnqueueAfter(ctx, "welcome:42", payload, 10*time.Minute)
//
//	// A Worker runs a handler on every message: nil acks it, an error
//	// retries it after the backoff, SkipRetry dead-letters it.
//	w := redisq.NewWorker(q, func(ctx context.Context, m *redisq.Message) error {
//		return send(ctx, m.Payload)
//	}, redisq.WorkerOptions{Concurrency: 8})
//	err = w.Run(ctx) // on ctx's end: stops taking, lets handlers finish
//
//	// A recurring job, enqueued exactly once per occurrence whatever the
//	// number of processes (every Worker keeps it going).
//	_, err = q.Register(ctx, "digest", redisq.Every(24*time.Hour), nil)
//
//	// One logical queue over three Cluster masters.
//	p, err := redisq.NewPartitioned(ctx, clusterClient, "emails", 3)
//
// Queue and Partitioned share Producer, Consumer and Admin; the operator
// calls (List, Get, RunNow, the dead letters, Pause, Workers, Audit,
// Destroy) are what dqctl and the dashboard use. The guarantees, the key
// layout and the options are in redisq's README; how it works inside
// (every state change one Lua script of the storage layer
// redisq/internal/rdb, waiting without polling, bounded scripts, Cluster
// slot moves, the Worker, the partitioned take) is in docs/redisq-design.md
// of the repository, and its figures, each with its command, in
// docs/performance.md.
package redisq
