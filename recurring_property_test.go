package delayqueue_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	dq "github.com/dq-go/delayqueue"
	"pgregory.net/rapid"
)

// Keyed with recurring keys as a state machine, on the fake clock of a
// synctest bubble, against a model: the queued items sorted by (deadline,
// schedule order), each recurring one with its series (schedule, CatchUp
// bound, missed occurrences in a row). Random Every periods and phases and
// a schedule of its own (a finite list of instants, so series end) are
// scheduled, replaced, cancelled, rescheduled and taken at random times by
// Poll, DrainExpired, TakeBatch and a blocked TakeEntry. Every hand-out
// must be the model's, each recurring key's occurrences must be strictly
// increasing (no duplicates) and none may be handed out early, and right
// after each hand-out Get and Contains must show the key's next occurrence.

// listSchedule recurs at start+offsets, then ends. Its pointer identifies
// it in Snapshots.
type listSchedule struct {
	start   time.Time
	offsets []time.Duration // ascending
}

func (l *listSchedule) Next(t time.Time) time.Time {
	for _, o := range l.offsets {
		if at := l.start.Add(o); at.After(t) {
			return at
		}
	}
	return time.Time{}
}

// rSeries is the model of one series.
type rSeries struct {
	sched   dq.Schedule
	period  time.Duration // Every: period and phase; 0 for a listSchedule
	phase   time.Duration
	list    []time.Duration // listSchedule offsets
	catchUp int
	behind  int
	last    time.Duration // latest occurrence handed out, -1 if none
	id      int           // identifies the series for the no-duplicate check
}

// next is the model's Next, in durations since start: the first occurrence
// after t, computed on Unix nanoseconds for Every (the bubble's clock sits
// in the year 2000, well inside int64 nanoseconds).
func (s *rSeries) next(start time.Time, t time.Duration) (time.Duration, bool) {
	if s.period > 0 {
		abs := start.UnixNano() + int64(t)
		m := ((abs-int64(s.phase))%int64(s.period) + int64(s.period)) % int64(s.period)
		return t - time.Duration(m) + s.period, true
	}
	for _, o := range s.list {
		if o > t {
			return o, true
		}
	}
	return 0, false
}

type rItem struct {
	key int
	v   int
	at  time.Duration
	seq int
	rec *rSeries // nil: one-shot
}

type rTake struct {
	e   dq.KeyedEntry[int, int]
	err error
	at  time.Duration
}

type recurringSM struct {
	q        *dq.Keyed[int, int]
	capacity int
	start    time.Time
	items    []rItem
	nextV    int
	seq      int
	nextID   int

	taker       context.CancelFunc // the one blocked TakeEntry, nil if none
	takerResult chan rTake

	offered, taken, removed, rescheduled uint64
}

func (m *recurringSM) now() time.Duration { return time.Since(m.start) }

func (m *recurringSM) find(key int) int {
	return slices.IndexFunc(m.items, func(it rItem) bool { return it.key == key })
}

func (m *recurringSM) insert(it rItem) {
	it.seq = m.seq
	m.seq++
	i, _ := slices.BinarySearchFunc(m.items, it, func(a, b rItem) int {
		return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.seq, b.seq))
	})
	m.items = slices.Insert(m.items, i, it)
}

func (m *recurringSM) dueAt(now time.Duration) bool {
	return len(m.items) > 0 && m.items[0].at <= now
}

// nextOccurrence is the policy: catch up one by one while CatchUp allows,
// else coalesce to the first occurrence after now.
func (m *recurringSM) nextOccurrence(s *rSeries, o, now time.Duration) (time.Duration, bool) {
	if s.catchUp > 0 {
		c, ok := s.next(m.start, o)
		if !ok {
			return 0, false
		}
		if c > now {
			s.behind = 0
			return c, true
		}
		if s.behind < s.catchUp {
			s.behind++
			return c, true
		}
	}
	s.behind = 0
	return s.next(m.start, now)
}

// handOut checks that got is the model's front item, due by now, and
// applies the hand-out: a recurring key stays, moved to its next
// occurrence, unless its series ends.
func (m *recurringSM) handOut(t *rapid.T, what string, got dq.Item[int, int], deadline *time.Time, now time.Duration) {
	if len(m.items) == 0 {
		t.Fatalf("%s handed out %v from an empty model", what, got)
	}
	f := m.items[0]
	if got.Key != f.key || got.Value != f.v {
		t.Fatalf("%s = %v, model front %+v (model %v)", what, got, f, m.items)
	}
	if f.at > now {
		t.Fatalf("%s handed out %v at %v, before its deadline %v", what, got, now, f.at)
	}
	if deadline != nil && !deadline.Equal(m.start.Add(f.at)) {
		t.Fatalf("%s: deadline %v, model %v", what, deadline.Sub(m.start), f.at)
	}
	m.items = m.items[1:]
	m.taken++
	if s := f.rec; s != nil {
		if f.at <= s.last {
			t.Fatalf("%s: occurrence %v of series %d after %v: a duplicate or out of order", what, f.at, s.id, s.last)
		}
		s.last = f.at
		if next, ok := m.nextOccurrence(s, f.at, now); ok {
			if next <= f.at {
				t.Fatalf("model: next occurrence %v not after %v", next, f.at)
			}
			f.at = next
			m.insert(f)
			m.offered++
		}
	}
}

// lookup checks Get, Deadline and Contains of key against the model.
func (m *recurringSM) lookup(t *rapid.T, key int) {
	v, at, ok := m.q.Get(key)
	k := m.find(key)
	if ok != (k >= 0) || m.q.Contains(key) != ok {
		t.Fatalf("Get/Contains(%d) = %v/%v, model index %d (model %v)", key, ok, m.q.Contains(key), k, m.items)
	}
	if ok && (v != m.items[k].v || !at.Equal(m.start.Add(m.items[k].at))) {
		t.Fatalf("Get(%d) = (%d, %v), model %+v", key, v, at.Sub(m.start), m.items[k])
	}
}

// handOutAll applies a batch (or Poll) handed out at now, then checks the
// keys handed out right after.
func (m *recurringSM) handOutAll(t *rapid.T, what string, got []dq.Item[int, int], now time.Duration) {
	for _, g := range got {
		m.handOut(t, what, g, nil, now)
	}
	for _, g := range got {
		m.lookup(t, g.Key)
	}
}

// settle waits for the bubble to block, then checks what the blocked taker
// took, if it returned.
func (m *recurringSM) settle(t *rapid.T) {
	synctest.Wait()
	if m.taker == nil {
		return
	}
	select {
	case r := <-m.takerResult:
		m.taker = nil
		switch {
		case r.err == nil:
			m.handOut(t, "TakeEntry", dq.Item[int, int]{Key: r.e.Key, Value: r.e.Value}, &r.e.Deadline, r.at)
			m.lookup(t, r.e.Key)
		case errors.Is(r.err, context.Canceled):
		default:
			t.Fatalf("TakeEntry: %v", r.err)
		}
	default:
	}
}

func (m *recurringSM) drawKey(t *rapid.T) int { return rapid.IntRange(0, 4).Draw(t, "key") }

func (m *recurringSM) drawDeadline(t *rapid.T) time.Duration {
	return m.now() + time.Duration(rapid.IntRange(-3, 12).Draw(t, "dms"))*time.Millisecond
}

// drawSeries draws an Every schedule, or a list of instants around now.
func (m *recurringSM) drawSeries(t *rapid.T) *rSeries {
	s := &rSeries{catchUp: rapid.IntRange(0, 2).Draw(t, "catchUp"), last: -1 << 62, id: m.nextID}
	m.nextID++
	if rapid.IntRange(0, 3).Draw(t, "kind") > 0 {
		s.period = time.Duration(rapid.IntRange(1, 7).Draw(t, "periodMs")) * time.Millisecond
		if rapid.Bool().Draw(t, "oddPeriod") {
			s.period += time.Duration(rapid.IntRange(1, 999).Draw(t, "periodUs")) * time.Microsecond
		}
		s.phase = time.Duration(rapid.IntRange(-5000, 5000).Draw(t, "phaseUs")) * time.Microsecond
		s.sched = dq.EveryPhase(s.period, s.phase)
		return s
	}
	n := rapid.IntRange(0, 5).Draw(t, "listLen")
	o := m.now() - 3*time.Millisecond
	for range n {
		o += time.Duration(rapid.IntRange(1, 4000).Draw(t, "gapUs")) * time.Microsecond
		s.list = append(s.list, o)
	}
	s.sched = &listSchedule{start: m.start, offsets: s.list}
	return s
}

// scheduleRecurring runs ScheduleRecurring (replace) or AddRecurring and
// checks it against the model.
func (m *recurringSM) scheduleRecurring(t *rapid.T, replace bool) {
	key, s := m.drawKey(t), m.drawSeries(t)
	v := m.nextV
	m.nextV++
	opts := []dq.RecurringOption{dq.CatchUp(s.catchUp)}
	first, hasFirst := time.Duration(0), rapid.IntRange(0, 3).Draw(t, "firstAt") == 0
	none := false // no occurrence after now
	if hasFirst {
		first = m.drawDeadline(t)
		opts = append(opts, dq.FirstAt(m.start.Add(first)))
	} else {
		var ok bool
		first, ok = s.next(m.start, m.now())
		none = !ok
	}
	var found bool
	var err error
	if replace {
		found, err = m.q.ScheduleRecurring(key, v, s.sched, opts...)
	} else {
		var added bool
		added, err = m.q.AddRecurring(key, v, s.sched, opts...)
		found = !added && err == nil
	}
	k := m.find(key)
	switch {
	case none:
		if !errors.Is(err, dq.ErrNoOccurrence) || found {
			t.Fatalf("ScheduleRecurring(%d) with no occurrence = (%v, %v), want ErrNoOccurrence", key, found, err)
		}
	case k >= 0:
		if err != nil || !found {
			t.Fatalf("ScheduleRecurring/AddRecurring(%d) of a queued key = (%v, %v)", key, found, err)
		}
		if replace {
			m.items = slices.Delete(m.items, k, k+1)
			m.insert(rItem{key: key, v: v, at: first, rec: s})
			m.rescheduled++
		}
	case m.capacity > 0 && len(m.items) >= m.capacity:
		if !errors.Is(err, dq.ErrFull) || found {
			t.Fatalf("ScheduleRecurring(%d) into a full queue = (%v, %v), want ErrFull", key, found, err)
		}
	default:
		if err != nil || found {
			t.Fatalf("ScheduleRecurring/AddRecurring(%d) of a new key = (%v, %v)", key, found, err)
		}
		m.insert(rItem{key: key, v: v, at: first, rec: s})
		m.offered++
	}
	m.settle(t)
}

// schedule runs Schedule (replace) or Add: a one-shot item, which ends a
// replaced key's series.
func (m *recurringSM) schedule(t *rapid.T, replace bool) {
	key, at := m.drawKey(t), m.drawDeadline(t)
	v := m.nextV
	m.nextV++
	var found bool
	var err error
	if replace {
		found, err = m.q.Schedule(key, v, m.start.Add(at))
	} else {
		var added bool
		added, err = m.q.Add(key, v, m.start.Add(at))
		found = !added && err == nil
	}
	k := m.find(key)
	switch {
	case k >= 0:
		if err != nil || !found {
			t.Fatalf("Schedule/Add(%d) of a queued key = (%v, %v)", key, found, err)
		}
		if replace {
			m.items = slices.Delete(m.items, k, k+1)
			m.insert(rItem{key: key, v: v, at: at})
			m.rescheduled++
		}
	case m.capacity > 0 && len(m.items) >= m.capacity:
		if !errors.Is(err, dq.ErrFull) || found {
			t.Fatalf("Schedule/Add(%d) into a full queue = (%v, %v)", key, found, err)
		}
	default:
		if err != nil || found {
			t.Fatalf("Schedule/Add(%d) of a new key = (%v, %v)", key, found, err)
		}
		m.insert(rItem{key: key, v: v, at: at})
		m.offered++
	}
	m.settle(t)
}

// checkEntries checks entries (a Snapshot or DrainEntries) against the
// model: same items, deadlines, schedules and CatchUp bounds, in order.
func (m *recurringSM) checkEntries(t *rapid.T, what string, es []dq.KeyedEntry[int, int]) {
	if len(es) != len(m.items) {
		t.Fatalf("%s has %d entries, model %d: %v", what, len(es), len(m.items), m.items)
	}
	for i, e := range es {
		it := m.items[i]
		var sched dq.Schedule
		catchUp := 0
		if it.rec != nil {
			sched, catchUp = it.rec.sched, it.rec.catchUp
		}
		if e.Key != it.key || e.Value != it.v || !e.Deadline.Equal(m.start.Add(it.at)) ||
			e.Schedule != sched || e.CatchUp != catchUp {
			t.Fatalf("%s[%d] = %+v, model %+v", what, i, e, it)
		}
	}
}

func (m *recurringSM) check(t *rapid.T) {
	if m.taker != nil && m.dueAt(m.now()) {
		t.Fatalf("a taker is blocked while %v is due", m.items[0])
	}
	s := m.q.Stats()
	if s.Len != len(m.items) || s.Offered != m.offered || s.Taken != m.taken || s.Removed != m.removed ||
		s.Rescheduled != m.rescheduled || s.Lateness.Count != m.taken {
		t.Fatalf("Stats %+v; model len=%d offered=%d taken=%d removed=%d rescheduled=%d",
			s, len(m.items), m.offered, m.taken, m.removed, m.rescheduled)
	}
	if err := dq.CheckKeyed(m.q); err != nil {
		t.Fatalf("invariant: %v", err)
	}
	m.checkEntries(t, "Snapshot", m.q.Snapshot())
}

func (m *recurringSM) actions() map[string]func(*rapid.T) {
	return map[string]func(*rapid.T){
		"ScheduleRecurring": func(t *rapid.T) { m.scheduleRecurring(t, true) },
		"AddRecurring":      func(t *rapid.T) { m.scheduleRecurring(t, false) },
		"Schedule":          func(t *rapid.T) { m.schedule(t, true) },
		"Add":               func(t *rapid.T) { m.schedule(t, false) },
		"Cancel": func(t *rapid.T) {
			key := m.drawKey(t)
			v, ok := m.q.Cancel(key)
			k := m.find(key)
			if ok != (k >= 0) || ok && v != m.items[k].v {
				t.Fatalf("Cancel(%d) = (%d, %v), model index %d", key, v, ok, k)
			}
			if ok {
				m.items = slices.Delete(m.items, k, k+1)
				m.removed++
			}
			m.lookup(t, key)
			m.settle(t)
		},
		"Reschedule": func(t *rapid.T) {
			key, at := m.drawKey(t), m.drawDeadline(t)
			ok := m.q.Reschedule(key, m.start.Add(at))
			k := m.find(key)
			if ok != (k >= 0) {
				t.Fatalf("Reschedule(%d) = %v, model index %d", key, ok, k)
			}
			if ok {
				it := m.items[k]
				m.items = slices.Delete(m.items, k, k+1)
				it.at = at
				if it.rec != nil {
					// The caller chose this occurrence, earlier than the last
					// one handed out maybe: the series goes on from it.
					it.rec.last = -1 << 62
				}
				m.insert(it)
				m.rescheduled++
			}
			m.settle(t)
		},
		"Lookup": func(t *rapid.T) { m.lookup(t, m.drawKey(t)) },
		"Poll": func(t *rapid.T) {
			key, v, ok := m.q.Poll()
			if ok != m.dueAt(m.now()) {
				t.Fatalf("Poll ok = %v, model due %v", ok, m.dueAt(m.now()))
			}
			if ok {
				m.handOutAll(t, "Poll", []dq.Item[int, int]{{Key: key, Value: v}}, m.now())
			}
			m.settle(t)
		},
		"DrainExpired": func(t *rapid.T) {
			max := rapid.IntRange(-1, 4).Draw(t, "max")
			got := m.q.DrainExpired(nil, max)
			m.checkBatch(t, "DrainExpired", got, max)
			m.settle(t)
		},
		"TakeBatch": func(t *rapid.T) {
			if !m.dueAt(m.now()) {
				t.Skip("nothing due: TakeBatch would block")
			}
			max := rapid.IntRange(-1, 4).Draw(t, "max")
			got, err := m.q.TakeBatch(context.Background(), nil, max)
			if err != nil {
				t.Fatalf("TakeBatch: %v", err)
			}
			m.checkBatch(t, "TakeBatch", got, max)
			m.settle(t)
		},
		"TakeEntry": func(t *rapid.T) {
			if m.taker != nil {
				t.Skip("a taker is blocked")
			}
			ctx, cancel := context.WithCancel(context.Background())
			m.taker = cancel
			go func() {
				e, err := m.q.TakeEntry(ctx)
				m.takerResult <- rTake{e, err, time.Since(m.start)}
			}()
			m.settle(t)
		},
		"CancelTake": func(t *rapid.T) {
			if m.taker == nil {
				t.Skip("no taker")
			}
			m.taker()
			m.settle(t)
			if m.taker != nil {
				t.Fatalf("cancelled taker did not return")
			}
		},
		"Advance": func(t *rapid.T) {
			advance(t)
			m.settle(t)
		},
		"": m.check,
	}
}

// checkBatch checks a batch handed out now: the model's due items, one at
// a time, catch-up occurrences queued due during the batch included, up to
// max.
func (m *recurringSM) checkBatch(t *rapid.T, what string, got []dq.Item[int, int], max int) {
	now := m.now()
	for i, g := range got {
		if max > 0 && i >= max {
			t.Fatalf("%s(%d) handed out %d items", what, max, len(got))
		}
		m.handOut(t, what, g, nil, now)
	}
	if (max <= 0 || len(got) < max) && m.dueAt(now) {
		t.Fatalf("%s(%d) = %v left %+v due", what, max, got, m.items[0])
	}
	for _, g := range got {
		m.lookup(t, g.Key)
	}
}

func TestRecurringStateMachine(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		rapid.SyncTest(t, func(t *rapid.T) {
			m := &recurringSM{
				capacity:    rapid.IntRange(0, 4).Draw(t, "capacity"),
				start:       time.Now(),
				takerResult: make(chan rTake, 1),
			}
			m.q = dq.NewKeyed[int, int](dq.WithCapacity(m.capacity))
			defer func() {
				m.q.Close()
				if m.taker != nil {
					<-m.takerResult
				}
			}()
			t.Repeat(m.actions())
			if m.taker != nil {
				m.taker()
				m.settle(t)
			}

			// Shutdown returns every key, recurring ones with their
			// schedules; restored into a new queue they give the same
			// schedule back, in the same order. (First hand out what is
			// due: with no taker, Shutdown would wait for it.)
			m.checkBatch(t, "DrainExpired", m.q.DrainExpired(nil, 0), 0)
			rest, err := m.q.Shutdown(context.Background())
			if err != nil {
				t.Fatalf("Shutdown: %v", err)
			}
			m.checkEntries(t, "Shutdown", rest)
			restored := dq.NewKeyed[int, int]()
			defer restored.Close()
			for _, e := range rest {
				if _, err := restored.Restore(e); err != nil {
					t.Fatalf("Restore(%+v): %v", e, err)
				}
			}
			m.q = restored
			m.checkEntries(t, "Snapshot after Restore", restored.Snapshot())
		})
	})
}

// String helps rapid's failure reports.
func (it rItem) String() string {
	kind := "once"
	if it.rec != nil {
		kind = fmt.Sprintf("series %d (period %v phase %v list %v catchUp %d)", it.rec.id, it.rec.period, it.rec.phase, it.rec.list, it.rec.catchUp)
	}
	return fmt.Sprintf("{key %d v %d at %v %s}", it.key, it.v, it.at, kind)
}
