//go:build linux

package delayqueue

import (
	"context"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
	"weak"
)

// The timerfd interface, from the standard library's syscall package alone
// so that the core module has no dependencies: the system call numbers are
// there for every Linux architecture, the flags equal the O_ ones, and
// itimerspec is two timespecs.
const (
	clockMonotonic = 1 // CLOCK_MONOTONIC
	tfdNonblock    = syscall.O_NONBLOCK
	tfdCloexec     = syscall.O_CLOEXEC
)

// itimerspec is struct itimerspec (timerfd_settime(2)).
type itimerspec struct {
	Interval syscall.Timespec
	Value    syscall.Timespec
}

// preciseTimer is the Linux leaderTimer behind WithPreciseTimer: a timerfd
// on CLOCK_MONOTONIC, non-blocking and wrapped by os.NewFile, so waiting for
// it to become readable parks the leader's goroutine in the network poller
// (not a thread) until the timer expires.
//
// arm and disarm are one timerfd_settime each, made under Queue.mu by the
// leader before it waits and by whoever changes the head while it waits;
// timerfd_settime also discards any expiration not yet read, so an expiry
// from an earlier arming can never end a later wait. A wait is one
// RawConn.Read whose callback checks ready and ctx without blocking, then
// reads the expiration count, parking on EAGAIN. The poller forgets old
// readiness just before the callback's first call, and the callback reads
// before parking, so an expiry that came first is never lost.
//
// Anything that must end a wait early (wake, a cancelled ctx) arms the
// timer to expire at once. wake is called after the token is sent on ready,
// and a cancelled ctx's Done channel is closed before its AfterFunc runs, so
// the callback's checks see the token or the closed channel, or else the
// early expiry comes after them and ends the parked read. A late early
// expiry (a ctx registration firing after its wait ended) can only make a
// later wait end early, which its caller treats as "look again". An arm
// made while a wait is parked discards such an early expiry too; the queue
// then calls wake again (Queue.rearmLocked), so a cancellation or a wake is
// never lost to a head change.
//
// Only the current leader calls wait, and successive leaders are ordered by
// Queue.mu, so the fields listed under "leader" need no lock. Every system
// call on the descriptor goes through rc, which holds a reference to it for
// the call's duration, so a wake or a cancellation that races with close
// never reaches a closed (or reused) descriptor number. If the descriptor
// fails (or was closed), the timer switches for good to an embedded runtime
// timer.
type preciseTimer struct {
	f  *os.File
	rc syscall.RawConn

	// Queue.mu: used only by arm and disarm.
	spec   itimerspec // the value armFn sets
	armErr syscall.Errno
	armFn  func(fd uintptr)

	// leader: used only inside wait.
	buf     [8]byte // a timerfd read: the expiration count
	state   waitState
	ready   <-chan struct{} // wait's arguments, for readFn
	done    <-chan struct{}
	readFn  func(fd uintptr) bool // pt.onReadable, bound once
	watched <-chan struct{}       // Done channel of the ctx registered in stop

	failed   atomic.Bool   // the descriptor failed: use fallback from now on
	fallback *runtimeTimer // armed under Queue.mu, like the timerfd

	wp     weak.Pointer[preciseTimer]
	cur    atomic.Value     // the Done channel of the wait in progress, noDone if none
	fireFn func(fd uintptr) // arms the timer to expire at once

	mu     sync.Mutex // guards stop and closed, shared by watch and close
	stop   func() bool
	closed bool
}

var noDone = (<-chan struct{})(nil)

// waitState is where a wait's RawConn.Read callback is, and how it ended.
type waitState uint8

const (
	waitParked    waitState = iota // not ended yet
	waitExpired                    // the timer expired (on time, or fired early)
	waitReadied                    // a token was on ready
	waitCancelled                  // ctx was done
	waitFailed                     // a system call failed
)

// fireNow is the timer value for "expire at once": a zero value would
// disarm, so it is the smallest non-zero relative value.
var fireNow = itimerspec{Value: syscall.Timespec{Nsec: 1}}

// settime arms the timerfd fd to expire once, spec.Value from now, which
// also discards any expiration not yet read.
//
// It and the timerfd read use RawSyscall, not Syscall, as neither can block.
// Syscall enters the scheduler's syscall state, and entering it while every
// P is idle wakes sysmon and resets its polling interval to 20 µs: with a
// wait every few hundred microseconds that alone more than doubled the CPU
// time of a waiting queue.
func settime(fd uintptr, spec *itimerspec) syscall.Errno {
	_, _, e := syscall.RawSyscall6(syscall.SYS_TIMERFD_SETTIME, fd, 0, uintptr(unsafe.Pointer(spec)), 0, 0, 0)
	return e
}

// newPreciseTimer returns a timerfd-backed leaderTimer, or the runtime timer
// if the caller is inside a synctest bubble or no timerfd can be had.
func newPreciseTimer() leaderTimer {
	// Inside a testing/synctest bubble time.Now has no monotonic reading
	// (and time is fake), so a real-clock timer would stall the bubble.
	if now := time.Now(); now == now.Round(0) {
		return newRuntimeTimer()
	}
	if pt := openPreciseTimer(); pt != nil {
		return pt
	}
	return newRuntimeTimer()
}

// openPreciseTimer creates the timerfd, or returns nil if that fails.
func openPreciseTimer() *preciseTimer {
	fd, _, e := syscall.RawSyscall(syscall.SYS_TIMERFD_CREATE, clockMonotonic, tfdNonblock|tfdCloexec, 0)
	if e != 0 {
		return nil // EMFILE, ENFILE, ENOMEM, or a seccomp filter
	}
	f := os.NewFile(uintptr(fd), "delayqueue-timerfd")
	// A read deadline can be set only on a descriptor the network poller
	// holds; on one it does not, every wait would fail at once.
	if f.SetReadDeadline(time.Time{}) != nil {
		f.Close()
		return nil
	}
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil
	}
	// The fallback is created before pt is shared: wait reads it without
	// Queue.mu.
	pt := &preciseTimer{f: f, rc: rc, fallback: newRuntimeTimer()}
	pt.cur.Store(noDone)
	pt.readFn = pt.onReadable
	pt.armFn = func(fd uintptr) { pt.armErr = settime(fd, &pt.spec) }
	pt.fireFn = func(fd uintptr) { settime(fd, &fireNow) }
	// The ctx registration may outlive the wait that made it. It holds the
	// timer weakly so that it cannot keep a dropped queue's descriptor open.
	pt.wp = weak.Make(pt)
	return pt
}

// onReadable is the wait's RawConn.Read callback: it returns false to park
// until the timerfd is readable, true when the wait is over (pt.state says
// why).
func (pt *preciseTimer) onReadable(fd uintptr) bool {
	select {
	case <-pt.ready:
		pt.state = waitReadied
		return true
	case <-pt.done: // nil, never ready, if ctx cannot be cancelled
		pt.state = waitCancelled
		return true
	default:
	}
	for {
		_, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&pt.buf)), uintptr(len(pt.buf)))
		switch e {
		case 0:
			pt.state = waitExpired
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false // not expired yet: park until it is
		default:
			pt.state = waitFailed
		}
		return true
	}
}

func (pt *preciseTimer) arm(d time.Duration) {
	if d <= 0 {
		d = 1 // a zero value would disarm
	}
	pt.settime(d)
}

func (pt *preciseTimer) disarm() { pt.settime(0) }

// settime arms the timerfd for d from now, or disarms it if d is 0.
func (pt *preciseTimer) settime(d time.Duration) {
	if !pt.failed.Load() {
		pt.spec.Value = syscall.NsecToTimespec(int64(d))
		if pt.rc.Control(pt.armFn) == nil && pt.armErr == 0 {
			return
		}
	}
	if d == 0 {
		pt.fallback.disarm()
	} else {
		pt.fallback.arm(d)
	}
	pt.failed.Store(true) // after arming, so a wait that sees it finds the fallback armed
}

func (pt *preciseTimer) wait(ctx context.Context, ready <-chan struct{}) error {
	if pt.failed.Load() {
		return pt.fallback.wait(ctx, ready)
	}
	done := ctx.Done()
	if done != nil {
		if err := ctx.Err(); err != nil {
			return err
		}
		if done != pt.watched {
			pt.watch(ctx, done)
		}
	}
	pt.state, pt.ready, pt.done = waitParked, ready, done
	pt.cur.Store(done)
	err := pt.rc.Read(pt.readFn)
	pt.cur.Store(noDone)
	state := pt.state
	pt.ready, pt.done = nil, nil
	switch {
	case err != nil || state == waitFailed:
		// Closed under us (Close sends a token to ready first), or the
		// descriptor failed. The caller looks at the queue again and
		// arms the fallback timer, which takes over from now on.
		pt.failed.Store(true)
		return nil
	case state == waitReadied:
		return nil
	}
	// Expired, or cancelled: an expiry may also be a cancellation's firing.
	if done != nil {
		return ctx.Err()
	}
	return nil
}

// watch registers ctx so its cancellation ends the current wait, replacing
// the registration for an earlier ctx. Only the leader calls it.
func (pt *preciseTimer) watch(ctx context.Context, done <-chan struct{}) {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	if pt.stop != nil {
		pt.stop()
		pt.stop = nil
	}
	pt.watched = nil
	if pt.closed {
		return // the wait will fall back; close must not miss a registration
	}
	wp := pt.wp
	pt.stop = context.AfterFunc(ctx, func() {
		// Fire only if a wait on this ctx is in progress: a registration
		// that outlived its wait must not wake the next leader.
		if t := wp.Value(); t != nil && t.cur.Load() == any(done) {
			t.fire()
		}
	})
	pt.watched = done
}

// fire arms the timer to expire at once, ending a parked wait. On a closed
// timer it does nothing.
func (pt *preciseTimer) fire() { _ = pt.rc.Control(pt.fireFn) }

func (pt *preciseTimer) wake() { pt.fire() }

func (pt *preciseTimer) close() {
	pt.mu.Lock()
	pt.closed = true
	if pt.stop != nil {
		pt.stop()
		pt.stop = nil
	}
	pt.mu.Unlock()
	pt.f.Close() // also ends a parked wait
}
