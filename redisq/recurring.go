package redisq

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Recurring registrations: a job registered by name with a schedule and a
// payload is stored in Redis and enqueued as an ordinary item at each of
// its occurrences, exactly once whatever the number of processes keeping
// it (KeepRecurring), with no leader.
//
// Keys (all under the queue's hash tag):
//
//	{dq:NAME}:rec:REG  hash    one registration REG: s its schedule's text
//	                           (ScheduleText), p payload, cu catch-up bound,
//	                           v version, g generation (+1 at every change
//	                           of s, p or cu), ct/ut created/updated (ms),
//	                           at the watermark: the latest occurrence
//	                           enqueued (ms), id its item's id, pv the one
//	                           enqueued before it, end "1" when the series
//	                           ended, rq/rr the last Register request id
//	                           and its reply
//	{dq:NAME}:recs     zset    the registrations' names (score 0: by name)
//	{dq:NAME}:recx     stream  the change feed: an entry per registration
//	                           created, changed or removed (MAXLEN 100), on
//	                           which keepers block
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
	catchUp  int
	version  int64
	first    time.Time
	hasFirst bool
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
	return func(c *registerConfig) { c.catchUp = n }
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
	// RegistrationUpdated: the schedule, payload or catch-up bound
	// differed and this Register replaced them (its version is at least
	// the stored one). The occurrence enqueued last, if it is still
	// scheduled and not yet due, was cancelled; the first occurrence after
	// now of the new schedule is enqueued, with the new payload.
	RegistrationUpdated
	// RegistrationUnchanged: the same schedule, payload and catch-up bound
	// were stored; nothing changed (a higher version is recorded) and the
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

// luaRec is luaCommon (which names the queue's keys from ARGV[1]) and what
// the recurring scripts share: the registration's key, occ_add, which
// writes an occurrence's item as Enqueue does (the same hash fields, a
// member from the queue's sequence, so that Stats counts it as enqueued),
// arm, which rings the wake marker when one of the new members is the head
// of sched, and changed, which adds an entry to the change feed. Each
// script declares in KEYS exactly the keys it may touch, and reads a key
// it finds while running (an item behind the registration's id field)
// before its first write.
const luaRecFuncs = `
local K_RECS, K_RECX = K_PREFIX .. 'recs', K_PREFIX .. 'recx'
local function rec_key(name) return K_PREFIX .. 'rec:' .. name end
local function fmt(x) return string.format('%d', x) end
local function occ_add(id, due, p, now)
  local mem = new_member(id)
  redis.call('HSET', ARGV[1] .. id, 'p', p, 'due', fmt(due), 'att', 0, 'st', 's', 'mem', mem, 'enq', fmt(now))
  redis.call('ZADD', K_SCHED, fmt(due), mem)
  return mem
end
local function arm(mems)
  local head = redis.call('ZRANGE', K_SCHED, 0, 0)
  if head[1] and mems[head[1]] then redis.call('ZADD', K_WAKE, 0, 'w') end
end
local function changed(name)
  redis.call('XADD', K_RECX, 'MAXLEN', '100', '*', 'n', name)
end
`

var luaRec = luaCommon + luaRecFuncs

// recKey, recsKey and recxKey are the registration name's hash, the index
// of names and the change feed.
func (q *Queue) recKey(name string) string { return q.kpref + "rec:" + name }
func (q *Queue) recsKey() string           { return q.kpref + "recs" }
func (q *Queue) recxKey() string           { return q.kpref + "recx" }

// register: KEYS sched, wake, stats, seq, the registration's hash, recs,
// recx, and the items of ARGV[8] and ARGV[10]. ARGV[2] name, ARGV[3] the
// schedule's text, ARGV[4] payload, ARGV[5] catch-up bound, ARGV[6]
// version, ARGV[7] and ARGV[8] the first occurrence (ms) and its item id
// if the registration is new, ARGV[9] and ARGV[10] if it exists (the first
// after now), ARGV[11] request id. Returns {code, now, at, x}: 1 created
// or 2 updated (at the first occurrence), 3 unchanged, 4 stale (x the
// stored version), 5 retry (the first occurrence given is not after the
// last one that has come, x: compute it again after x); a rerun of the
// request returns its first reply (rq, rr in the registration's hash).
//
// An update cancels the item of the last occurrence enqueued if it is
// still scheduled and not yet due (that occurrence of the old registration
// has not come), and keeps the watermark's promise: an occurrence that has
// come is never enqueued again.
var scriptRegister = newScript(luaRec+`
local R = rec_key(ARGV[2])
local f = redis.call('HMGET', R, 's', 'p', 'cu', 'v', 'g', 'id', 'at', 'pv', 'rq', 'rr')
local now = now_ms()
local again = replay(f[9], f[10], false)
if again then return {again[1], now, again[2], 0} end
local code, first, fid, g, pv = 1, tonumber(ARGV[7]), ARGV[8], 1, nil
local old = nil
if f[1] then
  local v = tonumber(f[4])
  if tonumber(ARGV[6]) < v then
    redis.call('HSET', R, 'sn', fmt(now))
    return {4, now, tonumber(f[7]), v}
  end
  if f[1] == ARGV[3] and f[2] == ARGV[4] and f[3] == ARGV[5] then
    redis.call('HSET', R, 'sn', fmt(now))
    if tonumber(ARGV[6]) > v then redis.call('HSET', R, 'v', ARGV[6]) end
    return {3, now, tonumber(f[7]), 0}
  end
  code, first, fid, g = 2, tonumber(ARGV[9]), ARGV[10], tonumber(f[5]) + 1
  local at = tonumber(f[7])
  if at <= now then
    if first <= at then return {5, now, at, at} end
    pv = at
  end
  -- Found while running: read before the first write.
  if f[6] then old = redis.call('HMGET', ARGV[1] .. f[6], 'st', 'mem', 'due') end
end
local exists = redis.call('EXISTS', ARGV[1] .. fid) == 1
if old and old[1] == 's' and tonumber(old[3]) > now then
  redis.call('ZREM', K_SCHED, old[2])
  redis.call('DEL', ARGV[1] .. f[6])
  redis.call('HINCRBY', K_STATS, 'cancelled', 1)
  if f[6] == fid then exists = false end
end
if not exists then
  local m = {}
  m[occ_add(fid, first, ARGV[4], now)] = true
  arm(m)
end
redis.call('HSET', R, 's', ARGV[3], 'p', ARGV[4], 'cu', ARGV[5], 'v', ARGV[6], 'g', fmt(g), 'ut', fmt(now),
  'at', fmt(first), 'id', fid, 'sn', fmt(now), 'rq', ARGV[#ARGV], 'rr', enc({code, first}))
redis.call('HDEL', R, 'end')
if code == 1 then redis.call('HSET', R, 'ct', fmt(now)) end
if pv then redis.call('HSET', R, 'pv', fmt(pv)) end
redis.call('ZADD', K_RECS, 0, ARGV[2])
changed(ARGV[2])
return {code, now, first, 0}
`, kSched, kWake, kStats, kSeq).acked()

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
	if c.catchUp > MaxCatchUp {
		return 0, fmt.Errorf("redisq: CatchUp(%d) over MaxCatchUp (%d)", c.catchUp, MaxCatchUp)
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
	now, err := q.client.Time(ctx).Result()
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
		extra := []string{q.recKey(name), q.recsKey(), q.recxKey(), q.itemKey(fid), q.itemKey(uid)}
		r, err := q.runOnce(ctx, scriptRegister, extra, name, text, payload, strconv.Itoa(c.catchUp),
			strconv.FormatInt(c.version, 10), first, fid, upd, uid)
		if err != nil {
			return 0, err
		}
		switch code := toInt(r[0]); code {
		case 1, 2, 3, 4:
			q.regMu.Lock()
			q.registered[name] = true
			q.regMu.Unlock()
			return RegisterOutcome(code), nil
		case 5:
			// The last occurrence that has come is at or after the first
			// one computed from our TIME: start after it.
			after = max(toInt(r[1]), toInt(r[3]))
			continue
		default:
			return 0, fmt.Errorf("redisq: register: unexpected reply %v", r)
		}
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

// unregister: KEYS sched, stats, the registration's hash, recs, recx,
// and the reply key of the request. ARGV[2] name, ARGV[3] request id.
// Returns {0} not found, {1, c} removed, c 1 when the item of the last
// occurrence enqueued was scheduled and is cancelled; a rerun of the
// request returns its first reply.
var scriptUnregister = newScript(luaRec+`
local R = rec_key(ARGV[2])
local id = redis.call('HGET', R, 'id')
if not id then return replay(nil, nil, true) or {0} end
-- Found while running: read before the first write.
local it = redis.call('HMGET', ARGV[1] .. id, 'st', 'mem')
local c = 0
if it[1] == 's' then
  redis.call('ZREM', K_SCHED, it[2])
  redis.call('DEL', ARGV[1] .. id)
  redis.call('HINCRBY', K_STATS, 'cancelled', 1)
  c = 1
end
redis.call('DEL', R)
redis.call('ZREM', K_RECS, ARGV[2])
changed(ARGV[2])
return done_gone({1, c})
`, kSched, kStats).withRID().acked()

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
	r, err := q.runOnce(ctx, scriptUnregister, []string{q.recKey(name), q.recsKey(), q.recxKey()}, name)
	if err != nil {
		return false, err
	}
	q.regMu.Lock()
	delete(q.registered, name)
	q.regMu.Unlock()
	if toInt(r[0]) == 0 {
		return false, ErrNotFound
	}
	return toInt(r[1]) == 1, nil
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
	// Seen is when a process whose code registers it last said so: a
	// Register call, then every minute the keeper (KeepRecurring, run by
	// every Worker) of the Queue value that registered it. Zero when none
	// has since this version of redisq. See Orphaned.
	Seen        time.Time
	PayloadSize int64
	Payload     []byte // set by Registration only
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

// regFields is the number of reply elements per registration of the list
// and get scripts.
const regFields = 17

// luaRegOut defines reg_out(out, name, withp): it appends the registration
// name's fields (name, s, cu, v, ct, ut, g, at, pv, end, id, rn, sn, the
// state and due time of the item of id, payload size, payload or an empty
// string) to out, or nothing when its hash is missing. Its hash and that
// item's are found while running; the scripts using it do not write.
const luaRegOut = `
local function reg_out(out, name, withp)
  local R = rec_key(name)
  local f = redis.call('HMGET', R, 's', 'cu', 'v', 'ct', 'ut', 'g', 'at', 'pv', 'end', 'id', 'rn', 'sn')
  if not f[1] then return end
  out[#out + 1] = name
  for i = 1, 12 do out[#out + 1] = f[i] or '' end
  local it = {}
  if f[10] then it = redis.call('HMGET', ARGV[1] .. f[10], 'st', 'due') end
  out[#out + 1] = it[1] or ''
  out[#out + 1] = it[2] or ''
  out[#out + 1] = redis.call('HSTRLEN', R, 'p')
  if withp then out[#out + 1] = redis.call('HGET', R, 'p') or '' else out[#out + 1] = '' end
end
`

// list registrations: KEYS recs, recx; the registrations' hashes are found
// while running (the script does not write). ARGV[2] the name after which the
// page starts ("" for the first), ARGV[3] the page size. Returns {now, the
// change feed's last entry id ("0-0" if none), the number of names read,
// the last of them, registration...} (see reg_out), without payloads.
// Bounded by the page size.
var scriptRecList = newScript(luaRec + luaRegOut + `
local start = '-'
if ARGV[2] ~= '' then start = '(' .. ARGV[2] end
local names = redis.call('ZRANGE', K_RECS, start, '+', 'BYLEX', 'LIMIT', 0, tonumber(ARGV[3]))
local feed = redis.call('XREVRANGE', K_RECX, '+', '-', 'COUNT', 1)
local out = {(now_ms()), '0-0', #names, names[#names] or ''}
if feed[1] then out[2] = feed[1][1] end
for _, n in ipairs(names) do reg_out(out, n, false) end
return out
`)

// regPage is how many registrations one list script reads.
const regPage = 100

// regRow is a registration as the list script returns it, with the
// fields the keeper needs parsed.
type regRow struct {
	name, spec, id string
	catchUp        int
	version        int64
	created        int64
	updated        int64
	gen            int64
	at, prev       int64
	hasPrev, ended bool
	extra, seen    int64  // the last extra run (RunNow) and the last sighting (ms), 0 if none
	itemState      string // the state code of the item of id ("" when it is gone)
	itemDue        int64  // its due time (ms)
	size           int64
	payload        string
}

func parseRegRows(r []interface{}) []regRow {
	var rows []regRow
	for i := 0; i+regFields <= len(r); i += regFields {
		s := func(j int) string { v, _ := r[i+j].(string); return v }
		n := func(j int) int64 { return toInt(r[i+j]) }
		rows = append(rows, regRow{
			name: s(0), spec: s(1), catchUp: int(n(2)), version: n(3), created: n(4), updated: n(5),
			gen: n(6), at: n(7), prev: n(8), hasPrev: s(8) != "", ended: s(9) == "1", id: s(10),
			extra: n(11), seen: n(12), itemState: s(13), itemDue: toMS(r[i+14]),
			size: n(15), payload: s(16),
		})
	}
	return rows
}

// listRegs reads every registration, a page of regPage per script, and
// returns them, Redis TIME at the first page and the change feed's last
// entry id then. The pages are not one snapshot: a registration changed
// meanwhile may be read before or after its change.
func (q *Queue) listRegs(ctx context.Context) (rows []regRow, now int64, feed string, err error) {
	keys := []string{q.recsKey(), q.recxKey()}
	after := ""
	for first := true; ; first = false {
		r, err := q.run(ctx, scriptRecList, keys, after, regPage)
		if err != nil {
			return nil, 0, "", err
		}
		if first {
			now, feed = toInt(r[0]), fmt.Sprint(r[1])
		}
		rows = append(rows, parseRegRows(r[4:])...)
		if toInt(r[2]) < regPage {
			return rows, now, feed, nil
		}
		after = fmt.Sprint(r[3])
	}
}

// registration makes the exported view of a row read at Redis time now.
func registration(row regRow, now int64) Registration {
	g := Registration{
		Name:        row.name,
		Spec:        row.spec,
		CatchUp:     row.catchUp,
		Version:     row.version,
		Created:     msTime(row.created),
		Updated:     msTime(row.updated),
		Enqueued:    msTime(row.at),
		EnqueuedID:  row.id,
		Ended:       row.ended,
		PayloadSize: row.size,
	}
	if row.seen > 0 {
		g.Seen = msTime(row.seen)
	}
	g.Schedule, g.SpecErr = ParseSchedule(row.spec)
	// after is the schedule's occurrence after the watermark, which a
	// keeper enqueues when the watermark comes.
	after := func() time.Time {
		if g.Schedule == nil || row.ended {
			return time.Time{}
		}
		if n, ok, err := nextOccurrence(g.Schedule, row.at); err == nil && ok {
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
	if row.at > now {
		if row.hasPrev {
			setLast(row.prev)
		}
		// The occurrence enqueued has not come. Its item runs at its time
		// unless an operator moved, cancelled or deleted it; the series
		// goes on at the watermark all the same.
		switch pending := row.itemState == "s"; {
		case pending && row.itemDue == row.at:
			g.Next = msTime(row.at)
		case pending && row.itemDue > now:
			g.Next = msTime(row.itemDue)
			if a := after(); !a.IsZero() && a.Before(g.Next) {
				g.Next = a
			}
		default:
			g.Next = after()
			if row.itemState != "" && row.itemDue != row.at && row.itemDue <= now {
				setLast(row.itemDue) // moved to run early
			}
		}
	} else {
		setLast(row.at)
		g.Next = after()
	}
	if row.extra > 0 {
		setLast(row.extra)
	}
	if hasLast {
		g.Last = msTime(last)
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

// get registration: KEYS the registration's hash. ARGV[2] name. Returns
// {now, registration} with the payload, or {now} when not found.
var scriptRecGet = newScript(luaRec + luaRegOut + `
local out = {(now_ms())}
reg_out(out, ARGV[2], true)
return out
`)

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
	r, err := q.run(ctx, scriptRecGet, []string{q.recKey(name)}, name)
	if err != nil {
		return Registration{}, err
	}
	rows := parseRegRows(r[1:])
	if len(rows) == 0 {
		return Registration{}, ErrNotFound
	}
	g := registration(rows[0], toInt(r[0]))
	g.Payload = []byte(rows[0].payload)
	return g, nil
}
