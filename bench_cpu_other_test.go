//go:build !unix

package delayqueue_test

// benchCPUTime is unavailable here: no cpu-ns/op metric.
func benchCPUTime() int64 { return -1 }
