//go:build !unix

package report

import "time"

// CPUTime is not available on this OS: CPU columns read 0.
func CPUTime() time.Duration { return 0 }
