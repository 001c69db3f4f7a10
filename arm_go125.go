//go:build !go1.26

package delayqueue

import (
	"math"
	"time"
)

// resetDue makes t expire at once.
//
// On Go 1.25, inside a testing/synctest bubble, Reset(0) of a stopped timer
// whose channel a goroutine is already receiving from never wakes that
// goroutine (golang/go#76052). The leader waits on a stopped timer while the
// queue is empty, so a blocked Take in a user's synctest test hung when an
// item already due was offered. Arming the timer before resetting it to 0
// avoids the bug. Go 1.26 does not need this (arm_go126.go).
func resetDue(t *time.Timer) {
	t.Reset(math.MaxInt64)
	t.Reset(0)
}
