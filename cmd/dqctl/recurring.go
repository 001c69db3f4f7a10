package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/dq-go/delayqueue/redisq"
)

// The recurring registrations of a queue (redisq Queue.Register): listed
// by recurring, made or replaced by register, removed by unregister.
// dqctl only edits what is stored in Redis: the processes that keep the
// registrations (every Worker, or Queue.KeepRecurring) enqueue each next
// occurrence, and a registration none of them keeps falls behind (its next
// occurrence is in the past), which recurring shows.

// maxRegVersion is the largest RegistrationVersion redisq accepts (it
// panics above it): 2^53-1, exact in the scripts' Lua numbers.
const maxRegVersion = 1<<53 - 1

// keeperNote says who keeps a registration going: not dqctl.
const keeperNote = "dqctl does not keep it going: a Worker (or Queue.KeepRecurring) in a process of yours enqueues each next occurrence"

// optString is a string flag that records whether it was given (an empty
// -payload is a payload).
type optString struct {
	val string
	set bool
}

func (o *optString) String() string     { return o.val }
func (o *optString) Set(s string) error { o.val, o.set = s, true; return nil }

// optInt is an int flag that records whether it was given (-catch-up 0
// differs from none with -catch-up-window).
type optInt struct {
	val int
	set bool
}

func (o *optInt) String() string { return strconv.Itoa(o.val) }
func (o *optInt) Set(s string) error {
	v, err := strconv.Atoi(s)
	if err != nil {
		return errors.New("not an integer")
	}
	o.val, o.set = v, true
	return nil
}

// registerOpts are register's flags.
type registerOpts struct {
	payload, payloadFile optString
	catchUp              optInt
	window               time.Duration
	overlap              string
	version              int64
	firstAt              string
	create               bool
}

func registerFlags(fs *flag.FlagSet, e *env) {
	r := &e.reg
	fs.Var(&r.payload, "payload", "the occurrences' payload, as `text` (default: empty)")
	fs.Var(&r.payloadFile, "payload-file", "read the payload from `file` (- for stdin)")
	fs.Var(&r.catchUp, "catch-up", fmt.Sprintf("enqueue up to `n` missed occurrences one by one when no process kept it for a while (0..%d; default 0: they coalesce into one, or %d with -catch-up-window)",
		redisq.MaxCatchUp, redisq.MaxCatchUp))
	fs.DurationVar(&r.window, "catch-up-window", 0, "skip an occurrence that would start more than `d` after it became due (10m); the catch-up after a gap enqueues only the missed ones of the last d (redisq CatchUpWindow)")
	fs.StringVar(&r.overlap, "overlap", "allow", "what becomes of an occurrence due while an earlier one runs: allow (it runs beside it) or skip (deleted unstarted; redisq Overlap); a `policy`")
	fs.Int64Var(&r.version, "version", 0, "the registration's `version`: a lower one than the stored one changes nothing (redisq RegistrationVersion)")
	fs.BoolVar(&r.create, "create", false, "register in a queue that has no data yet (nothing was ever enqueued in it); "+
		"without it such a queue name is refused, as a likely typo")
	fs.StringVar(&r.firstAt, "first-at", "", "a new registration's first occurrence, RFC 3339 `time` (2026-12-01T09:00:00Z; ignored when it exists); default: the schedule's first after now")
}

// checkRegName returns the usage error of a bad registration name, or nil.
func checkRegName(name string) error {
	switch {
	case name == "":
		return usageErr("empty registration name")
	case len(name) > redisq.MaxRegistrationName:
		return usageErr("registration name of %d bytes, over %d", len(name), redisq.MaxRegistrationName)
	}
	return nil
}

// registrationJSON is a registration in recurring -json: times by the
// Redis clock, those that do not apply left out (last before the first
// run, next when the series ended or spec_error says why it cannot be
// computed here, seen when no live code has registered it since this
// version of redisq); behind: next is before now, no process keeps it;
// orphaned: no live code has registered it within redisq.OrphanAfter.
type registrationJSON struct {
	Name        string    `json:"name"`
	Spec        string    `json:"spec"`
	SpecError   string    `json:"spec_error,omitempty"`
	CatchUp     int       `json:"catch_up"`
	Version     int64     `json:"version"`
	Created     time.Time `json:"created"`
	Updated     time.Time `json:"updated"`
	Enqueued    time.Time `json:"enqueued"`
	EnqueuedID  string    `json:"enqueued_id"`
	Last        time.Time `json:"last,omitzero"`
	Next        time.Time `json:"next,omitzero"`
	Ended       bool      `json:"ended"`
	Paused      time.Time `json:"paused,omitzero"`
	Behind      bool      `json:"behind"`
	Seen        time.Time `json:"seen,omitzero"`
	Orphaned    bool      `json:"orphaned"`
	PayloadSize int64     `json:"payload_size"`
	// The occurrence policies (redisq Overlap, CatchUpWindow) and what
	// they skipped.
	Overlap        string `json:"overlap"`
	CatchUpWindow  string `json:"catch_up_window,omitempty"`
	Skipped        int64  `json:"skipped"`
	LastSkipped    string `json:"last_skipped,omitempty"`
	LastSkipReason string `json:"last_skip_reason,omitempty"`
}

// policyCell is the POLICY column: "-", "skip overlap", "window 10m0s".
func policyCell(r redisq.Registration) string {
	var p []string
	if r.Overlap == redisq.OverlapSkip {
		p = append(p, "skip overlap")
	}
	if r.CatchUpWindow > 0 {
		p = append(p, "window "+r.CatchUpWindow.String())
	}
	if len(p) == 0 {
		return "-"
	}
	return strings.Join(p, ", ")
}

// skippedCell is the SKIPPED column: how many, and why the last was
// (read from Redis, where anyone may have written anything: a cell).
func skippedCell(r redisq.Registration) string {
	if r.Skipped == 0 {
		return "0"
	}
	return fmt.Sprintf("%d (last %s)", r.Skipped, cell(string(r.LastSkipReason)))
}

// behind: the registration's next occurrence has come and no process has
// enqueued it (a keeper enqueues each one a period ahead).
func behind(r redisq.Registration, now time.Time) bool {
	return !r.Ended && !r.Next.IsZero() && r.Next.Before(now)
}

// nextCell is the NEXT column: "in 42m0s (16:00:00Z)", "ended", "behind:
// ...", or why this process cannot compute it.
func nextCell(r redisq.Registration, now time.Time) string {
	switch {
	case r.Ended:
		return "ended"
	case !r.Paused.IsZero():
		return "paused " + rel(r.Paused, now) + " (dqctl resume-recurring)"
	case r.Next.IsZero() && r.SpecErr != nil:
		return "cannot compute here: " + clean(r.SpecErr.Error())
	case r.Next.IsZero():
		return "-"
	case behind(r, now):
		return "behind: no process keeps it (due " + rel(r.Next, now) + ", " + absTime(r.Next, now) + ")"
	}
	return when(r.Next, now)
}

// seenCell is the SEEN column: when live code last registered it, or
// "orphaned (...)" when none has within redisq.OrphanAfter.
func seenCell(r redisq.Registration, now time.Time) string {
	switch {
	case !r.Orphaned(now):
		return rel(r.Seen, now)
	case r.Seen.IsZero():
		return "orphaned (never seen)"
	}
	return "orphaned (seen " + rel(r.Seen, now) + ")"
}

// orphanNote explains the orphaned registrations of the summary line.
const orphanNote = "no live code has registered them for %v (their Register call was removed, their processes stopped or run no Worker, " +
	"or dqctl register made them); any keeper still enqueues their occurrences: once their code is gone, dqctl unregister %s NAME removes them"

func cmdRecurring(e *env) error {
	q, err := e.queue()
	if err != nil {
		return err
	}
	// Redis TIME before the registrations: a next occurrence before it is
	// behind for sure (the list reads its own TIME, later).
	now, err := e.c.Time(e.ctx).Result()
	if err != nil {
		return err
	}
	regs, err := q.Registrations(e.ctx)
	if err != nil {
		return err
	}
	if e.json {
		out := struct {
			Now           time.Time          `json:"now"`
			Registrations []registrationJSON `json:"registrations"`
		}{now, []registrationJSON{}}
		for _, r := range regs {
			j := registrationJSON{Name: r.Name, Spec: r.Spec, CatchUp: r.CatchUp, Version: r.Version, Created: r.Created,
				Updated: r.Updated, Enqueued: r.Enqueued, EnqueuedID: r.EnqueuedID, Last: r.Last, Next: r.Next,
				Ended: r.Ended, Paused: r.Paused, Behind: behind(r, now), Seen: r.Seen, Orphaned: r.Orphaned(now), PayloadSize: r.PayloadSize,
				Overlap: r.Overlap.String(), Skipped: r.Skipped, LastSkipped: r.LastSkipped, LastSkipReason: string(r.LastSkipReason)}
			if r.CatchUpWindow > 0 {
				j.CatchUpWindow = r.CatchUpWindow.String()
			}
			if r.SpecErr != nil {
				j.SpecError = r.SpecErr.Error()
			}
			out.Registrations = append(out.Registrations, j)
		}
		return writeJSON(e.stdout, out)
	}
	if len(regs) == 0 {
		e.printf("no recurring registrations in queue %s (dqctl register adds one)\n", quote(q.Name()))
		return nil
	}
	rows := [][]string{{"NAME", "SCHEDULE", "NEXT", "LAST", "SEEN", "CATCHUP", "POLICY", "SKIPPED", "VERSION", "PAYLOAD", "UPDATED"}}
	late, orphans := 0, 0
	for _, r := range regs {
		last := "-"
		if !r.Last.IsZero() {
			last = when(r.Last, now)
		}
		if behind(r, now) {
			late++
		}
		if r.Orphaned(now) {
			orphans++
		}
		rows = append(rows, []string{cell(r.Name), cell(r.Spec), nextCell(r, now), last, seenCell(r, now), strconv.Itoa(r.CatchUp),
			policyCell(r), skippedCell(r), strconv.FormatInt(r.Version, 10), strconv.FormatInt(r.PayloadSize, 10), rel(r.Updated, now)})
	}
	if err := writeTable(e.stdout, rows); err != nil {
		return err
	}
	e.printf("%s in queue %s", plural(int64(len(regs)), "registration"), quote(q.Name()))
	if late > 0 {
		e.printf("; %d behind: no process keeps them (a Worker, or Queue.KeepRecurring, on the queue enqueues each next occurrence)", late)
	}
	if orphans > 0 {
		e.printf("; %d orphaned: "+orphanNote, orphans, redisq.OrphanAfter, hintName(q.Name()))
	}
	e.printf("\n")
	return nil
}

// regPayload is register's payload: -payload, -payload-file or none.
func regPayload(e *env) ([]byte, error) {
	r := &e.reg
	switch {
	case r.payload.set && r.payloadFile.set:
		return nil, usageErr("give -payload or -payload-file, not both")
	case r.payload.set:
		return []byte(r.payload.val), nil
	case !r.payloadFile.set:
		return nil, nil
	case r.payloadFile.val == "-":
		return io.ReadAll(e.stdin)
	}
	b, err := os.ReadFile(r.payloadFile.val)
	if err != nil {
		return nil, usageErr("-payload-file: %v", err)
	}
	return b, nil
}

func cmdRegister(e *env) error {
	name, text := e.args[1], e.args[2]
	if err := checkRegName(name); err != nil {
		return err
	}
	sched, err := redisq.ParseSchedule(text)
	if err != nil {
		return usageErr("%v", err)
	}
	r := &e.reg
	if r.catchUp.val < 0 || r.catchUp.val > redisq.MaxCatchUp {
		return usageErr("-catch-up must be in 0..%d", redisq.MaxCatchUp)
	}
	if r.window < 0 {
		return usageErr("-catch-up-window must not be negative")
	}
	overlap := redisq.OverlapAllow
	switch r.overlap {
	case "allow":
	case "skip":
		overlap = redisq.OverlapSkip
	default:
		return usageErr("-overlap %s: want allow or skip", quote(r.overlap))
	}
	if r.version < 0 || r.version > maxRegVersion {
		return usageErr("-version must be in 0..%d", int64(maxRegVersion))
	}
	opts := []redisq.RegisterOption{redisq.RegistrationVersion(r.version), redisq.Overlap(overlap), redisq.CatchUpWindow(r.window)}
	if r.catchUp.set {
		opts = append(opts, redisq.CatchUp(r.catchUp.val))
	}
	if r.firstAt != "" {
		t, err := time.Parse(time.RFC3339, r.firstAt)
		if err != nil {
			return usageErr("-first-at %s is not an RFC 3339 time (2026-12-01T09:00:00Z): %v", quote(r.firstAt), err)
		}
		opts = append(opts, redisq.FirstAt(t))
	}
	payload, err := regPayload(e)
	if err != nil {
		return err
	}
	q, err := registerQueue(e)
	if err != nil {
		return err
	}
	out, err := q.Register(e.ctx, name, sched, payload, opts...)
	if errors.Is(err, redisq.ErrNoOccurrence) {
		return usageErr("schedule %s has no occurrence after now; nothing changed", quote(text))
	}
	if err != nil {
		return err
	}
	what := fmt.Sprintf("registration %s of queue %s", quote(name), quote(q.Name()))
	// What is stored now, for the next occurrence (or the version that
	// made it stale).
	now, err := e.c.Time(e.ctx).Result()
	var g redisq.Registration
	if err == nil {
		g, err = q.Registration(e.ctx, name)
	}
	read := err == nil
	switch out {
	case redisq.RegistrationStale:
		v := "a higher version"
		if read {
			v = fmt.Sprintf("version %d", g.Version)
		}
		least := r.version + 1
		if read {
			least = g.Version // among equal versions the last Register wins
		}
		return notFound("%s has %s stored, over -version %d; nothing changed (give -version %d or more to replace it)",
			what, v, r.version, least)
	case redisq.RegistrationUnchanged:
		e.printf("%s already has this schedule, payload, catch-up and policy; nothing changed\n", what)
		return nil
	}
	verb := "created"
	if out == redisq.RegistrationUpdated {
		verb = "updated"
	}
	spec, _ := redisq.ScheduleText(sched) // it parsed: it has a text
	e.printf("%s %s: %s", verb, what, clean(spec))
	if read && g.EnqueuedID != "" {
		e.printf("; enqueued %s, due %s (%s)", quote(g.EnqueuedID), rel(g.Enqueued, now), stamp(g.Enqueued))
	}
	e.printf("\n%s\n", keeperNote)
	return nil
}

// registerQueue opens register's queue: one that exists, or, with
// -create, a queue with no data yet (its workers may be running with
// nothing enqueued), which it adds to the registry as redisq.New does.
// Without -create a queue name that does not exist is most likely a
// typo: not found, nothing changed.
func registerQueue(e *env) (*redisq.Queue, error) {
	q, err := e.queue()
	var ee *exitErr
	switch {
	case !errors.As(err, &ee) || ee.code != exitNotFound:
		return q, err
	case !e.reg.create:
		return nil, notFound("%s; -create registers in a queue with no data yet", ee.msg)
	}
	return redisq.New(e.ctx, e.c, e.args[0], redisq.WithEvictionCheck(redisq.EvictionIgnore))
}

// regTarget opens the queue of args[0] for the registration named by
// args[1], and returns the error to give when that registration is missing.
func regTarget(e *env) (q *redisq.Queue, name string, missing func() error, err error) {
	name = e.args[1]
	if err := checkRegName(name); err != nil {
		return nil, "", nil, err
	}
	if q, err = e.queue(); err != nil {
		return nil, "", nil, err
	}
	return q, name, func() error {
		return notFound("no registration %s in queue %s; nothing changed (dqctl recurring lists them)", quote(name), quote(q.Name()))
	}, nil
}

func cmdUnregister(e *env) error {
	q, name, missing, err := regTarget(e)
	if err != nil {
		return err
	}
	g, err := q.Registration(e.ctx, name)
	if errors.Is(err, redisq.ErrNotFound) {
		return missing()
	}
	if err != nil {
		return err
	}
	prompt := fmt.Sprintf("unregister %s (%s) of queue %s? No occurrence of it is enqueued any more; its last one, if still scheduled, is cancelled. [y/N] ",
		quote(name), clean(g.Spec), quote(q.Name()))
	if err := e.confirm(prompt, "y"); err != nil {
		return err
	}
	cancelled, err := q.Unregister(e.ctx, name)
	if errors.Is(err, redisq.ErrNotFound) {
		return missing()
	}
	if err != nil {
		return err
	}
	if cancelled {
		e.printf("unregistered %s of queue %s; cancelled its scheduled occurrence (the last one enqueued)\n", quote(name), quote(q.Name()))
	} else {
		e.printf("unregistered %s of queue %s; no occurrence of it was scheduled (one taken runs to its end)\n", quote(name), quote(q.Name()))
	}
	return nil
}

// cmdPauseRecurring pauses (pause true) or resumes a registration.
func cmdPauseRecurring(e *env, pause bool) error {
	q, name, missing, err := regTarget(e)
	if err != nil {
		return err
	}
	var did bool
	if pause {
		did, err = q.PauseRecurring(e.ctx, name)
	} else {
		did, err = q.ResumeRecurring(e.ctx, name)
	}
	if errors.Is(err, redisq.ErrNotFound) {
		return missing()
	}
	if err != nil {
		return err
	}
	switch {
	case pause && did:
		e.printf("paused %s of queue %s; cancelled its scheduled occurrence (not yet due); no occurrence is enqueued until resume-recurring\n", quote(name), quote(q.Name()))
	case pause:
		e.printf("paused %s of queue %s; no occurrence is enqueued until resume-recurring (none was waiting to be cancelled, or it was paused already)\n", quote(name), quote(q.Name()))
	case did:
		e.printf("resumed %s of queue %s: its next occurrence after now is enqueued; those of the pause are skipped\n", quote(name), quote(q.Name()))
	default:
		e.printf("%s of queue %s is not paused; nothing changed\n", quote(name), quote(q.Name()))
	}
	return nil
}

// cmdBackfill enqueues the past occurrences of a registration in a range
// (redisq Backfill).
func cmdBackfill(e *env) error {
	var t [2]time.Time
	for i, a := range e.args[2:4] {
		v, err := time.Parse(time.RFC3339, a)
		if err != nil {
			return usageErr("%s is not an RFC 3339 time (2026-12-01T09:00:00Z): %v", quote(a), err)
		}
		t[i] = v
	}
	if !t[0].Before(t[1]) {
		return usageErr("FROM %s is not before TO %s", quote(e.args[2]), quote(e.args[3]))
	}
	q, name, missing, err := regTarget(e)
	if err != nil {
		return err
	}
	defer q.Close()
	res, err := q.Backfill(e.ctx, name, t[0], t[1])
	if errors.Is(err, redisq.ErrNotFound) {
		return missing()
	}
	if err != nil {
		return err
	}
	what := fmt.Sprintf("registration %s of queue %s", quote(name), quote(q.Name()))
	if res.Enqueued+res.Existing == 0 {
		e.printf("%s has no occurrence from %s to %s that its series has passed; nothing enqueued\n", what, stamp(t[0]), stamp(t[1]))
		return nil
	}
	e.printf("backfilled %s: %s enqueued, due now, of the occurrences %s to %s", what, plural(int64(res.Enqueued), "occurrence"),
		stamp(res.First), stamp(res.Last))
	if res.Existing > 0 {
		e.printf("; %d left as they are (their items exist)", res.Existing)
	}
	e.printf("\n")
	return nil
}
