//go:build linux

package main

import (
	"fmt"
	"os"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// osFloors are the Linux-only floors: nanosleep on a locked OS thread (what
// a dedicated timer thread gets) and a timerfd read through the netpoller
// (what WithPreciseTimer builds on).
func osFloors() []floor {
	nanosleep := floor{
		name: "floor/nanosleep",
		arm:  func() error { runtime.LockOSThread(); return nil },
		sleep: func(d time.Duration) {
			ts := unix.NsecToTimespec(int64(d))
			for {
				var rem unix.Timespec
				if err := unix.Nanosleep(&ts, &rem); err != unix.EINTR {
					return
				}
				ts = rem
			}
		},
		done: runtime.UnlockOSThread,
	}

	var fd int
	var f *os.File
	var buf [8]byte
	timerfd := floor{
		name: "floor/timerfd",
		arm: func() error {
			var err error
			fd, err = unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
			if err != nil {
				return fmt.Errorf("timerfd_create: %w", err)
			}
			// A non-blocking fd makes os.NewFile register it with the
			// netpoller, so Read parks the goroutine, not the thread.
			f = os.NewFile(uintptr(fd), "timerfd")
			return nil
		},
		sleep: func(d time.Duration) {
			spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))}
			if err := unix.TimerfdSettime(fd, 0, &spec, nil); err != nil {
				panic(err)
			}
			if _, err := f.Read(buf[:]); err != nil {
				panic(err)
			}
		},
		done: func() { f.Close() },
	}
	return []floor{nanosleep, timerfd}
}
