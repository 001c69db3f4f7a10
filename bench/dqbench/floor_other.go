//go:build !linux

package main

// osFloors: nanosleep and timerfd floors exist only on Linux.
func osFloors() []floor { return nil }
