package redisq

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/dq-go/delayqueue/redisq/internal/rdb"
)

// Recurring registrations: a job registered by name with a schedule and a
// payload is stored in Redis and enqueued as an ordinary item at each of
// its occurrences, exactly once whatever the number of processes keeping
// it (KeepRecurring), with no leader.
//
// Keys: a hash per registration, the set of their names and a change feed
// (rec:REG, rn:REG, recs and recx in Keys, internal/rdb/keys.go).
//
// An occurrence at T is the item "rec:REG@" + T in UTC (RFC 3339, to the
// millisecond: OccurrenceID), due at T. Exactly once rests on the
// watermark: a script enqueues occurrences only after the watermark it was
// computed from, sets the watermark to the last of them, and does nothing
// if the watermark (or generation) is no longer the one it was computed
// from. So any number of keepers racing to enqueue the next occurrence
// enqueue it once, and an occurrence enqueued, taken or acked is never
// enqueued again. The next occurrence is enqueued when the one before it
// falls due (one period ahead), so the queue's timer delivers it, never
// early; the keepers have a whole period to enqueue it.

// ErrNoOccurrence is returned by Register when the schedule has no
// occurrence after now (its Next returned the zero time).
var ErrNoOccurrence = errors.New("redisq: schedule has no occurrence after now")

// MaxCatchUp is the largest CatchUp bound Register accepts: the missed
// occurrences a keeper enqueues at once are bounded by it, so that one
// script stays short.
const MaxCatchUp = 100

// MaxRegistrationName is the longest registration name, in bytes.
const MaxRegistrationName = 256

// maxVersion is the largest RegistrationVersion: the scripts compare
// versions as Lua numbers, exact up to 2^53-1.
const maxVersion = 1<<53 - 1

// RegisterOption configures Register.
type RegisterOption func(*registerConfig)

type registerConfig struct {
	catchUp    int
	hasCatchUp bool
	version    int64
	first      time.Time
	hasFirst   bool
	job        Job
	overlap    OverlapPolicy // see recurring_policy.go
	window     time.Duration
}

// RegisterJob gives every occurrence of the registration the Job j (its
// kind, headers and options), as EnqueueItem.Job gives one item its Job.
// A Register whose job differs from the stored one is an update, like one
// whose payload differs.
func RegisterJob(j Job) RegisterOption {
	return func(c *registerConfig) { c.job = j }
}

// CatchUp makes a registration enqueue missed occurrences one by one
// instead of coalescing them, as the core's CatchUp: when a keeper finds
// that the occurrences after the last one enqueued have come and gone
// while no keeper ran, it enqueues up to n of them, oldest first, each due
// at once with its own time, then the first occurrence after now (the
// rest are coalesced). CatchUp(0) is the default: the occurrence enqueued
// before the gap (delivered when the consumers come back) stands for
// everything missed, and the next one enqueued is the first after now.
// Register returns an error if n > MaxCatchUp; CatchUp panics if n < 0.
func CatchUp(n int) RegisterOption {
	if n < 0 {
		panic(fmt.Sprintf("redisq: CatchUp with a negative bound %d", n))
	}
	return func(c *registerConfig) { c.catchUp, c.hasCatchUp = n, true }
}

// FirstAt makes t the first occurrence of a new registration instead of
// the schedule's first after now; t may be past (enqueued due at once, the
// keepers then handling the occurrences after it as missed ones). It is
// ignored when the registration exists: a changed registration starts
// after now, and an unchanged one goes on.
func FirstAt(t time.Time) RegisterOption {
	return func(c *registerConfig) { c.first, c.hasFirst = t, true }
}

// RegistrationVersion sets the registration's version (default 0): a
// Register with a lower version than the one stored changes nothing
// (RegistrationStale), so that during a rolling deploy a process of the
// old release that restarts cannot bring back the old schedule. Among
// equal versions the last Register wins. It panics unless 0 <= v < 2^53.
func RegistrationVersion(v int64) RegisterOption {
	if v < 0 || v > maxVersion {
		panic(fmt.Sprintf("redisq: RegistrationVersion %d not in 0..2^53-1", v))
	}
	return func(c *registerConfig) { c.version = v }
}

// RegisterOutcome is what Register did.
type RegisterOutcome int

const (
	// RegistrationCreated: the registration is new; its first occurrence
	// is enqueued.
	RegistrationCreated RegisterOutcome = iota + 1
	// RegistrationUpdated: the schedule, payload, job, catch-up bound or
	// occurrence policy (Overlap, CatchUpWindow) differed and this Register replaced them (its version is at least
	// the stored one). The occurrence enqueued last, if it is still
	// scheduled and not yet due, was cancelled; the first occurrence after
	// now of the new schedule is enqueued, with the new payload.
	RegistrationUpdated
	// RegistrationUnchanged: the same schedule, payload, job, catch-up bound
	// and occurrence policy were stored; nothing changed (a higher version is recorded) and the
	// series goes on.
	RegistrationUnchanged
	// RegistrationStale: a higher version is stored; nothing changed.
	RegistrationStale
)

// String returns "created", "updated", "unchanged" or "stale".
func (o RegisterOutcome) String() string {
	switch o {
	case RegistrationCreated:
		return "created"
	case RegistrationUpdated:
		return "updated"
	case RegistrationUnchanged:
		return "unchanged"
	case RegistrationStale:
		return "stale"
	}
	return fmt.Sprintf("RegisterOutcome(%d)", int(o))
}

// occurrencePrefix starts the id of every occurrence item.
const occurrencePrefix = "rec:"

// OccurrenceID returns the id of the item of registration name's
// occurrence at t: "rec:" + name + "@" + t in UTC, RFC 3339 with the
// milliseconds if any ("rec:digest@2026-03-29T07:00:00Z"). t is rounded up
// to the millisecond, as due times are.
func OccurrenceID(name string, t time.Time) string {
	return occurrenceID(name, dueMS(t))
}

func occurrenceID(name string, ms int64) string {
	return occurrencePrefix + name + "@" + time.UnixMilli(ms).UTC().Format(time.RFC3339Nano)
}

// Occurrence parses the id of an occurrence item (Message.ID, Item.ID):
// the registration's name and the occurrence's time, which a retried
// message's Due no longer is. ok is false for any other id.
func Occurrence(id string) (name string, at time.Time, ok bool) {
	rest, ok := strings.CutPrefix(id, occurrencePrefix)
	i := strings.LastIndexByte(rest, '@')
	if !ok || i < 0 {
		return "", time.Time{}, false
	}
	at, err := time.Parse(time.RFC3339Nano, rest[i+1:])
	if err != nil {
		return "", time.Time{}, false
	}
	return rest[:i], at, true
}

func checkRegName(name string) error {
	switch {
	case name == "":
		return errors.New("redisq: empty registration name")
	case len(name) > MaxRegistrationName:
		return fmt.Errorf("redisq: registration name of %d bytes, over MaxRegistrationName (%d)", len(name), MaxRegistrationName)
	}
	return nil
}

// Register registers (or replaces) the recurring job name of the queue:
// at each occurrence of s an item with payload is enqueued, its id
// OccurrenceID(name, occurrence) and due at the occurrence, an ordinary
// item (leases, retries, dead letters, Cancel and the admin calls apply:
// Cancel skips that occurrence only). The registration is stored in Redis:
// any process that runs KeepRecurring (every Worker does) enqueues the
// next occurrence when one falls due, exactly once whatever their number;
// while none runs, no occurrence after the one enqueued is, and the first
// keeper back applies the catch-up policy (CatchUp). Register itself
// enqueues the first occurrence: s's first after Redis TIME, or FirstAt's.
//
// s must be storable (ScheduleText: Every, EveryPhase, Cron, CronIn,
// ParseSchedule, or a robfig/cron/v3 schedule with a named zone); Redis
// stores its text, and every keeper computes the occurrences from it.
//
// Registering again is how a registration is changed, and is safe at every
// start of every process: the same schedule text, payload and catch-up
// bound change nothing (RegistrationUnchanged: the series and its
// watermark go on); a different one replaces them (RegistrationUpdated),
// unless a higher RegistrationVersion is stored (RegistrationStale). Of
// racing Registers with different definitions, the highest version wins,
// and among equal versions the last one Redis runs. Either way one
// occurrence to come is enqueued, never two.
//
// A job of a kind is registered typed with JobKind.Register. Register
// logs a warning (WithLogger) for a payload that a typed handler of the
// job's kind, registered in this process (JobKind.Handle, HandleJSON),
// does not decode: every occurrence would be dead-lettered.
//
// It blocks for two round trips (Redis TIME, then one script). It returns
// an error, changing nothing, for a bad name (empty, over
// MaxRegistrationName bytes), a schedule that cannot be stored (prefixed
// "redisq:", naming what is accepted), CatchUp over MaxCatchUp,
// ErrNoOccurrence, ErrClosed after Close, or a Redis/context error (the
// registration may or may not have been stored; registering again is
// safe), ErrNotReplicated among them (WithReplicaAcks). A Register whose reply was lost and that go-redis runs again
// returns the first run's outcome. It panics if s is nil.
func (q *Queue) Register(ctx context.Context, name string, s Schedule, payload []byte, opts ...RegisterOption) (RegisterOutcome, error) {
	if s == nil {
		panic("redisq: Register with a nil Schedule")
	}
	if err := checkRegName(name); err != nil {
		return 0, err
	}
	var c registerConfig
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	if err := c.job.check(); err != nil {
		return 0, err
	}
	if err := c.job.noUnique("a recurring registration"); err != nil {
		return 0, err
	}
	for _, err := range checkTypedPayload(name, c.job.Kind, payload) {
		q.opt.logger.Warn("redisq: Register: "+err.Error(), "queue", q.name, "registration", name)
	}
	if c.catchUp > MaxCatchUp {
		return 0, fmt.Errorf("redisq: CatchUp(%d) over MaxCatchUp (%d)", c.catchUp, MaxCatchUp)
	}
	if c.window > 0 && !c.hasCatchUp {
		c.catchUp = MaxCatchUp // the window bounds the catch-up
	}
	text, err := ScheduleText(s)
	if err != nil {
		return 0, err
	}
	// The occurrences are those every keeper computes: from the text.
	sched, err := ParseSchedule(text)
	if err != nil {
		return 0, fmt.Errorf("redisq: schedule %q does not parse back: %w", text, err)
	}
	if q.isClosed() {
		return 0, ErrClosed
	}
	now, err := q.db.Time(ctx)
	if err != nil {
		return 0, err
	}
	return q.registerAfter(ctx, name, sched, text, payload, c, dueMS(now))
}

// registerAfter is Register from the script on, with the Redis time (ms) read
// before it.
func (q *Queue) registerAfter(ctx context.Context, name string, sched Schedule, text string, payload []byte, c registerConfig, after int64) (RegisterOutcome, error) {
	for range 4 {
		upd, ok, err := nextOccurrence(sched, after)
		if err != nil {
			return 0, err
		}
		if !ok {
			return 0, ErrNoOccurrence
		}
		first := upd
		if c.hasFirst {
			first = dueMS(c.first)
		}
		fid, uid := occurrenceID(name, first), occurrenceID(name, upd)
		job := c.job.stored()
		job.Occurrence = occPolicy{overlap: c.overlap, window: c.window}.text()
		r, err := q.db.Register(ctx, rdb.RegisterArgs{Name: name, Spec: text, Payload: payload, CatchUp: c.catchUp,
			Version: c.version, First: first, FirstID: fid, Update: upd, UpdateID: uid,
			FirstDue: occurrenceDue(sched, name, first), UpdateDue: occurrenceDue(sched, name, upd), Job: job})
		if err != nil {
			return 0, err
		}
		if r.Code == 5 {
			// The last occurrence that has come is at or after the first
			// one computed from our TIME: start after it.
			after = r.RetryAfter
			continue
		}
		q.regMu.Lock()
		q.registered[name] = true
		q.regMu.Unlock()
		return RegisterOutcome(r.Code), nil
	}
	return 0, errors.New("redisq: register: the registration kept changing; try again")
}

// nextOccurrence returns s's first occurrence after ms, in ms (rounded up
// as due times are), or ok false when there is none. A Next that returns a
// time not after its argument is an error.
func nextOccurrence(s Schedule, ms int64) (next int64, ok bool, err error) {
	t := s.Next(time.UnixMilli(ms))
	if t.IsZero() {
		return 0, false, nil
	}
	n := dueMS(t)
	if n <= ms {
		return 0, false, fmt.Errorf("redisq: schedule %v: Next(%v) returned %v, not after it", s, time.UnixMilli(ms).UTC(), t)
	}
	return n, true, nil
}

// Unregister removes the registration name: no keeper enqueues another
// occurrence of it, and the item of the last occurrence enqueued is
// cancelled if it is still scheduled (due or not); one already taken runs
// to its end (Cancel marks it), and missed occurrences enqueued together
// by a catch-up stay. It blocks for one round trip and returns whether an
// occurrence was cancelled, ErrNotFound for an unknown name, ErrClosed
// after Close, or a Redis/context error (ErrNotReplicated among them, with
// WithReplicaAcks). An Unregister whose reply was lost and that go-redis
// runs again returns the first run's result.
func (q *Queue) Unregister(ctx context.Context, name string) (cancelled bool, err error) {
	if err := checkRegName(name); err != nil {
		return false, err
	}
	if q.isClosed() {
		return false, ErrClosed
	}
	found, cancelled, err := q.db.Unregister(ctx, name)
	if err != nil {
		return false, err
	}
	q.regMu.Lock()
	delete(q.registered, name)
	q.regMu.Unlock()
	if !found {
		return false, ErrNotFound
	}
	return cancelled, nil
}

// PauseRecurring pauses the registration name: no keeper enqueues an
// occurrence of it until ResumeRecurring, and the item of its last
// occurrence is cancelled if it is scheduled and not yet due (one already
// due has come and is delivered). The registration stays, with its
// definition; a Register of it meanwhile changes nothing (the same
// definition) or replaces the definition and keeps it paused. It reports
// whether an occurrence was cancelled; a registration already paused is
// left as it is (false, nil). ErrNotFound for an unknown name, ErrClosed
// after Close, or a Redis/context error. One round trip; a rerun of a
// lost reply reports the first run's outcome.
func (q *Queue) PauseRecurring(ctx context.Context, name string) (cancelled bool, err error) {
	if err := checkRegName(name); err != nil {
		return false, err
	}
	if q.isClosed() {
		return false, ErrClosed
	}
	found, _, cancelled, err := q.db.PauseRec(ctx, name)
	if err != nil {
		return false, err
	}
	if !found {
		return false, ErrNotFound
	}
	return cancelled, nil
}

// ResumeRecurring resumes the paused registration name: the schedule's
// first occurrence after now (Redis TIME) is enqueued and the keepers go
// on from it; the occurrences of the pause are skipped (CatchUp does not
// bring them back). It reports whether it was paused. ErrNotFound for an
// unknown name, ErrClosed after Close, or a Redis/context error.
func (q *Queue) ResumeRecurring(ctx context.Context, name string) (resumed bool, err error) {
	if err := checkRegName(name); err != nil {
		return false, err
	}
	if q.isClosed() {
		return false, ErrClosed
	}
	_, row, ok, err := q.db.RecGet(ctx, name)
	if err != nil {
		return false, err
	}
	if !ok {
		return false, ErrNotFound
	}
	sched, err := ParseSchedule(row.Spec)
	if err != nil {
		return false, err
	}
	now, err := q.db.Time(ctx)
	if err != nil {
		return false, err
	}
	after := dueMS(now)
	for range 4 {
		a := rdb.ResumeArgs{Name: name}
		if !row.Ended {
			n, ok, err := nextOccurrence(sched, after)
			if err != nil {
				return false, err
			}
			if ok {
				a.First, a.FirstDue, a.FirstID, a.HasFirst = n, occurrenceDue(sched, name, n), occurrenceID(name, n), true
			}
		}
		r, err := q.db.ResumeRec(ctx, a)
		if err != nil {
			return false, err
		}
		switch r.Code {
		case 0:
			return false, ErrNotFound
		case 2:
			return false, nil
		case 5:
			after = r.RetryAfter
			continue
		}
		return true, nil
	}
	return false, errors.New("redisq: resume: the registration kept changing; try again")
}

// Registration is one recurring registration of a queue, as Registrations
// and Registration read it. Times are by the Redis clock.
type Registration struct {
	Name string
	// Spec is the schedule's text (ScheduleText); Schedule is what
	// ParseSchedule makes of it, or nil with SpecErr when this process
	// cannot (a text written by a later version, a zone missing from this
	// machine's time zone database).
	Spec     string
	Schedule Schedule
	SpecErr  error
	CatchUp  int   // the CatchUp bound
	Version  int64 // the RegistrationVersion
	Created  time.Time
	Updated  time.Time // when Register last changed it
	// Enqueued is the latest occurrence enqueued (the watermark) and
	// EnqueuedID its item's id.
	Enqueued   time.Time
	EnqueuedID string
	// Last is the latest run that has come (zero if none yet): the
	// occurrence enqueued if it is due, else the one before it; or, if
	// later, an extra run (RunNow) or the enqueued occurrence's item that
	// an operator moved to run early. A cancelled occurrence counts as
	// come at its time.
	Last time.Time
	// Next is the next run to come: the occurrence enqueued if it is not
	// yet due and its item still waits for its time; when an operator
	// cancelled or deleted that item, the schedule's next occurrence after
	// it (which a keeper enqueues when the cancelled one's time comes);
	// when they moved it later, the earlier of the two. Once the
	// occurrence enqueued is due, Next is the schedule's next after it,
	// which no keeper has enqueued yet: it is in the past when no process
	// keeps the registration. Zero when the series ended or Schedule is
	// nil.
	Next time.Time
	// Ended is set when the schedule had no occurrence after the last one
	// enqueued; the registration stays until Unregister.
	Ended bool
	// Paused is when PauseRecurring paused it (zero: not paused); Next is
	// then zero.
	Paused time.Time
	// Seen is when a process whose code registers it last said so: a
	// Register call, then every minute the keeper (KeepRecurring, run by
	// every Worker) of the Queue value that registered it. Zero when none
	// has since this version of redisq. See Orphaned.
	Seen        time.Time
	PayloadSize int64
	Payload     []byte // set by Registration only
	// Job is what every occurrence gets (RegisterJob).
	Job Job
	// Overlap and CatchUpWindow are its occurrence policies (zero: none);
	// Skipped counts the occurrences they skipped, LastSkipped is the id
	// of the last one and LastSkipReason why.
	Overlap        OverlapPolicy
	CatchUpWindow  time.Duration
	Skipped        int64
	LastSkipped    string
	LastSkipReason SkipReason
}

// OrphanAfter is how long a registration goes unseen (Registration.Seen)
// before Orphaned reports it: three of the keepers' rounds (seenEvery).
const OrphanAfter = 3 * time.Minute

// seenEvery is how often a keeper records that the registrations of its
// Queue value are still registered by live code (a variable for tests).
var seenEvery = time.Minute

// Orphaned reports whether no live process has registered r within
// OrphanAfter before now (a Redis time, such as Stats.Now): the code that
// called Register is gone (removed, or every process running it stopped),
// or its processes run no keeper (KeepRecurring; every Worker runs one,
// unless WorkerOptions.NoRecurring). Occurrences of an orphaned
// registration are still enqueued by any keeper: remove it with
// Unregister once its code is gone.
func (r Registration) Orphaned(now time.Time) bool {
	return r.Seen.IsZero() || now.Sub(r.Seen) > OrphanAfter
}

// regPage is how many registrations one list script reads.
const regPage = 100

// listRegs reads every registration, a page of regPage per script, and
// returns them, Redis TIME at the first page and the change feed's last
// entry id then. The pages are not one snapshot: a registration changed
// meanwhile may be read before or after its change.
func (q *Queue) listRegs(ctx context.Context) (rows []rdb.Reg, now int64, feed string, err error) {
	after := ""
	for first := true; ; first = false {
		p, err := q.db.RecList(ctx, after, regPage)
		if err != nil {
			return nil, 0, "", err
		}
		if first {
			now, feed = p.Now, p.Feed
		}
		rows = append(rows, p.Regs...)
		if p.Read < regPage {
			return rows, now, feed, nil
		}
		after = p.Last
	}
}

// registration makes the exported view of a row read at Redis time now.
func registration(row rdb.Reg, now int64) Registration {
	g := Registration{
		Name:        row.Name,
		Spec:        row.Spec,
		CatchUp:     row.CatchUp,
		Version:     row.Version,
		Created:     msTime(row.Created),
		Updated:     msTime(row.Updated),
		Enqueued:    msTime(row.At),
		EnqueuedID:  row.ID,
		Ended:       row.Ended,
		PayloadSize: row.Size,
		Job:         jobFrom(row.Job),
		Skipped:     row.Skipped, LastSkipped: row.LastSkipped, LastSkipReason: SkipReason(row.LastSkipWhy),
	}
	pol := parseOccPolicy(row.Job.Occurrence)
	g.Overlap, g.CatchUpWindow = pol.overlap, pol.window
	if row.Seen > 0 {
		g.Seen = msTime(row.Seen)
	}
	g.Schedule, g.SpecErr = ParseSchedule(row.Spec)
	// after is the schedule's occurrence after the watermark, which a
	// keeper enqueues when the watermark comes.
	after := func() time.Time {
		if g.Schedule == nil || row.Ended {
			return time.Time{}
		}
		if n, ok, err := nextOccurrence(g.Schedule, row.At); err == nil && ok {
			return msTime(n)
		}
		return time.Time{}
	}
	var last int64
	hasLast := false
	setLast := func(t int64) {
		if !hasLast || t > last {
			last, hasLast = t, true
		}
	}
	if row.At > now {
		if row.HasPrev {
			setLast(row.Prev)
		}
		// The occurrence enqueued has not come. Its item runs at its time
		// unless an operator moved, cancelled or deleted it; the series
		// goes on at the watermark all the same.
		switch pending := row.ItemState == rdb.Scheduled; {
		case pending && row.ItemDue == row.At:
			g.Next = msTime(row.At)
		case pending && row.ItemDue > now:
			g.Next = msTime(row.ItemDue)
			if a := after(); !a.IsZero() && a.Before(g.Next) {
				g.Next = a
			}
		default:
			g.Next = after()
			if row.ItemState != "" && row.ItemDue != row.At && row.ItemDue <= now {
				setLast(row.ItemDue) // moved to run early
			}
		}
	} else {
		setLast(row.At)
		g.Next = after()
	}
	if row.Extra > 0 {
		setLast(row.Extra)
	}
	if hasLast {
		g.Last = msTime(last)
	}
	if row.Paused > 0 {
		g.Paused, g.Next = msTime(row.Paused), time.Time{}
	}
	return g
}

// Registrations returns the queue's recurring registrations, sorted by
// name, without their payloads (PayloadSize says how large each is; see
// Registration). It reads them in pages of 100, one script each, so a
// registration changed meanwhile may be read before or after its change.
// It returns ErrClosed after Close, or a Redis/context error.
func (q *Queue) Registrations(ctx context.Context) ([]Registration, error) {
	if q.isClosed() {
		return nil, ErrClosed
	}
	rows, now, _, err := q.listRegs(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Registration, len(rows))
	for i, row := range rows {
		out[i] = registration(row, now)
	}
	return out, nil
}

// Registration returns the registration name with its payload (one
// round trip), ErrNotFound if there is none, ErrClosed after Close, or a
// Redis/context error.
func (q *Queue) Registration(ctx context.Context, name string) (Registration, error) {
	if err := checkRegName(name); err != nil {
		return Registration{}, err
	}
	if q.isClosed() {
		return Registration{}, ErrClosed
	}
	now, row, ok, err := q.db.RecGet(ctx, name)
	if err != nil {
		return Registration{}, err
	}
	if !ok {
		return Registration{}, ErrNotFound
	}
	g := registration(row, now)
	g.Payload = []byte(row.Payload)
	return g, nil
}
