//go:build !unix

package main

import "time"

// cpuTime is not available on this OS: CPU columns read 0.
func cpuTime() time.Duration { return 0 }
