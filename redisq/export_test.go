package redisq

import "github.com/dq-go/delayqueue/redisq/redistest"

// StartTestServer starts a throwaway redis-server for the Example functions
// (which have no testing.T) and returns its address and a function that
// stops it.
func StartTestServer() (addr string, stop func()) {
	s, err := redistest.Start()
	if err != nil {
		panic(err)
	}
	return s.Addr, s.Close
}
