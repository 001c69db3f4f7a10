package delayqueue

// WithPreciseTimer makes the leader, the one blocked taker that sleeps until
// the head is due, wait on a high-resolution timer instead of the runtime's
// time.Timer.
//
// On Linux the runtime's timers wake late by about half a millisecond at the
// median and over a millisecond at the tail on an idle process, because the
// network poller sleeps in epoll_wait, whose timeout is whole milliseconds
// (golang/go#44343, golang/go#53824). With this option each queue owns one
// timerfd (CLOCK_MONOTONIC) registered with the network poller: the leader
// arms it for the head's remaining delay and parks its goroutine on a read
// of it, without spinning and without holding a thread. Deliveries are then
// typically late by tens of microseconds rather than hundreds. Followers
// are unchanged; everything else about the queue (ordering, exactly-once
// delivery, ctx and Close behaviour) is the same with or without the option.
//
// Costs and limits:
//   - The queue holds one file descriptor until Close. A queue that is
//     dropped without Close has its descriptor closed by the garbage
//     collector (os.File's finalizer), some time after it became
//     unreachable; call Close to release it promptly.
//   - Each wait makes three system calls (arm the timerfd, read it before
//     parking, read it after) where time.Timer makes none, and any call
//     that changes the head while a taker waits on the timer (Offer, Put,
//     Reschedule, Remove, Poll, DrainExpired, a Take or TakeBatch that
//     finds the head due) makes one, to re-arm it. Per wake-up that is
//     cheaper than the runtime timer; but the runtime timer's
//     millisecond granularity lets one wake-up deliver every item due within
//     the same millisecond, so a queue with many items due per millisecond
//     wakes more often, and spends more CPU time, with this option.
//   - A Take whose ctx can be cancelled (ctx.Done() != nil) registers a
//     context.AfterFunc so that cancellation can end the wait. The
//     registration is kept while later waits use a ctx with the same Done
//     channel, so a consumer looping on one ctx allocates only for its first
//     wait; a wait under a different ctx than the previous one allocates.
//     Takes with context.Background allocate nothing.
//
// A timerfd runs on the real clock, so the option must not be used where
// time is fake. Under testing/synctest, a queue created inside a bubble with
// this option uses the runtime timer instead, silently (inside a bubble
// time.Now carries no monotonic reading, which is how New tells). A queue
// created outside a bubble keeps its timerfd wherever it is used.
//
// The option falls back to time.Timer, silently, when a timerfd cannot be
// had: on systems other than Linux, and on Linux when timerfd_create fails
// (for example with EMFILE) or the descriptor cannot be registered with the
// network poller. New never fails because of this option.
func WithPreciseTimer() Option {
	return func(c *config) { c.precise = true }
}
