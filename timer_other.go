//go:build !linux

package delayqueue

// newPreciseTimer returns the runtime timer: a timerfd is Linux-only, and
// WithPreciseTimer is documented to fall back to time.Timer elsewhere.
func newPreciseTimer() leaderTimer { return newRuntimeTimer() }
