package delayqueue

// WithPreciseTimer makes the leader wait on a high-resolution timer instead
// of the runtime's time.Timer. (Placeholder: falls back to time.Timer.)
func WithPreciseTimer() Option {
	return func(c *config) { c.precise = true }
}

func newPreciseTimer() leaderTimer { return new(runtimeTimer) }
