// Command dqctl inspects and administers redisq queues on a Redis server:
// it lists queues (the sick first) and their items (with their kinds, or
// those of one kind), shows one item with its headers and own options,
// shows stats (once, or refreshed with a chart of what is coming due) and
// the live workers, groups dead items by reason, requeues or deletes dead
// items (by id, all, or one reason's), runs items now, deletes items,
// purges a state, destroys a queue, lists, registers and unregisters
// recurring jobs (which it does not keep going: a Worker does), serves
// Prometheus metrics, and serves a web dashboard (package dqweb).
//
//	go run ./cmd/dqctl -redis 127.0.0.1:6379 queues
//	go install github.com/dq-go/delayqueue/cmd/dqctl@latest
//
// Run dqctl -h for the commands and flags. Exit codes: 0 success, 1 an
// error (Redis unreachable, a failed command), 2 bad usage, 3 no such queue,
// item or registration (or an item not in the state the command needs, or
// a register whose -version is below the one stored), 4 aborted at the
// confirmation prompt. Names, ids, kinds, headers, reasons and payloads are
// printed with every non-printable character escaped, so stored data cannot
// send escape sequences to the terminal.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/redis/go-redis/v9"
)

type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

func main() {
	// go-redis logs dial failures itself; dqctl reports errors once, itself.
	redis.SetLogger(quiet{})
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
