//go:build unix

package report

import (
	"syscall"
	"time"
)

// CPUTime returns the user+system CPU time used by the process so far.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
