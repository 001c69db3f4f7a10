//go:build go1.26

package delayqueue

import "time"

// resetDue makes t expire at once. (Go 1.25 needs more: arm_go125.go.)
func resetDue(t *time.Timer) { t.Reset(0) }
