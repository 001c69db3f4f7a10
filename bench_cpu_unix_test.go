//go:build unix

package delayqueue_test

import "syscall"

// benchCPUTime returns the process's user+system CPU time in ns.
func benchCPUTime() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return -1
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
