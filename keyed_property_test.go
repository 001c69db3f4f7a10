package delayqueue_test

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	dq "github.com/dq-go/delayqueue"
	"pgregory.net/rapid"
)

// Keyed as a state machine, on the fake clock of a synctest bubble, against
// a model: a map from key to item plus the items sorted by (deadline,
// schedule order). Few keys, so upserts, dedupes, cancels and takes of the
// same key interleave constantly; blocked takers run concurrently with all
// of it.

type kItem struct {
	key int
	v   int // unique per Schedule/Add/Put call, so a replacement shows
	at  time.Duration
	seq int
}

type kTakerResult struct {
	taker int
	key   int
	v     int
	err   error
	at    time.Duration
}

type keyedSM struct {
	q        *dq.Keyed[int, int]
	capacity int
	start    time.Time
	items    []kItem // sorted by (at, seq)
	nextV    int
	seq      int

	smTakers[kTakerResult]

	offered, taken, removed, rescheduled uint64
}

func (m *keyedSM) now() time.Duration { return time.Since(m.start) }

func (m *keyedSM) find(key int) int {
	return slices.IndexFunc(m.items, func(it kItem) bool { return it.key == key })
}

func (m *keyedSM) insert(it kItem) {
	it.seq = m.seq
	m.seq++
	i, _ := slices.BinarySearchFunc(m.items, it, func(a, b kItem) int {
		return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.seq, b.seq))
	})
	m.items = slices.Insert(m.items, i, it)
}

func (m *keyedSM) due() int {
	n := 0
	for n < len(m.items) && m.items[n].at <= m.now() {
		n++
	}
	return n
}

// takeFront removes the model's first n items, checking they match got.
func (m *keyedSM) takeFront(t *rapid.T, what string, got []dq.Item[int, int]) {
	for i, g := range got {
		if i >= len(m.items) || g.Key != m.items[i].key || g.Value != m.items[i].v {
			t.Fatalf("%s = %v, model %v", what, got, m.items)
		}
		if m.items[i].at > m.now() {
			t.Fatalf("%s handed out %v before its deadline", what, g)
		}
	}
	m.items = m.items[len(got):]
	m.taken += uint64(len(got))
}

// settle waits for the bubble to block, then checks what blocked takers
// took: the earliest due items, one each, as in queueSM.settle.
func (m *keyedSM) settle(t *rapid.T) {
	synctest.Wait()
	var got []dq.Item[int, int]
	for {
		var r kTakerResult
		select {
		case r = <-m.results:
		default:
			slices.SortFunc(got, func(a, b dq.Item[int, int]) int {
				return cmp.Compare(m.find(a.Key), m.find(b.Key))
			})
			m.takeFront(t, "blocked takers", got)
			return
		}
		cancelled := m.cancelled[r.taker]
		delete(m.takers, r.taker)
		delete(m.cancelled, r.taker)
		switch {
		case r.err == nil:
			k := m.find(r.key)
			if k < 0 || m.items[k].v != r.v {
				t.Fatalf("taker %d got (%d, %d), which is not queued", r.taker, r.key, r.v)
			}
			got = append(got, dq.Item[int, int]{Key: r.key, Value: r.v})
		case cancelled && errors.Is(r.err, context.Canceled):
		default:
			t.Fatalf("taker %d: %v (cancelled=%v)", r.taker, r.err, cancelled)
		}
	}
}

func (m *keyedSM) check(t *rapid.T) {
	if live := len(m.takers) - len(m.cancelled); live > 0 && m.due() > 0 {
		t.Fatalf("%d takers blocked while %d items are due", live, m.due())
	}
	s := m.q.Stats()
	if s.Len != len(m.items) || s.Offered != m.offered || s.Taken != m.taken || s.Removed != m.removed ||
		s.Rescheduled != m.rescheduled || s.Lateness.Count != m.taken || s.Waiting != len(m.takers) {
		t.Fatalf("Stats %+v; model len=%d offered=%d taken=%d removed=%d rescheduled=%d takers=%d",
			s, len(m.items), m.offered, m.taken, m.removed, m.rescheduled, len(m.takers))
	}
	// The key index holds exactly the queued keys.
	if n := dq.KeyedIndexLen(m.q); n != len(m.items) {
		t.Fatalf("key index holds %d keys, %d queued", n, len(m.items))
	}
	if err := dq.CheckKeyed(m.q); err != nil {
		t.Fatalf("invariant: %v", err)
	}
	snap := m.q.Snapshot()
	if len(snap) != len(m.items) {
		t.Fatalf("Snapshot has %d entries, model %d", len(snap), len(m.items))
	}
	for i, e := range snap {
		it := m.items[i]
		if e.Key != it.key || e.Value != it.v || !e.Deadline.Equal(m.start.Add(it.at)) {
			t.Fatalf("Snapshot[%d] = %+v, model %+v", i, e, it)
		}
	}
}

func (m *keyedSM) drawKey(t *rapid.T) int { return rapid.IntRange(0, 5).Draw(t, "key") }

func (m *keyedSM) drawDeadline(t *rapid.T) time.Duration {
	return m.now() + time.Duration(rapid.IntRange(-3, 12).Draw(t, "dms"))*time.Millisecond
}

// schedule runs Schedule (replace) or Add (!replace) and checks it against
// the model: replacement keeps the key's place in the index and never fails
// with ErrFull; insertion fails with ErrFull when the queue is full.
func (m *keyedSM) schedule(t *rapid.T, replace bool) {
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
			m.insert(kItem{key: key, v: v, at: at})
			m.rescheduled++
		}
	case m.capacity > 0 && len(m.items) >= m.capacity:
		if !errors.Is(err, dq.ErrFull) || found {
			t.Fatalf("Schedule/Add(%d) into a full queue = (%v, %v), want ErrFull", key, found, err)
		}
	default:
		if err != nil || found {
			t.Fatalf("Schedule/Add(%d) of a new key = (%v, %v)", key, found, err)
		}
		m.insert(kItem{key: key, v: v, at: at})
		m.offered++
	}
	m.settle(t)
}

func (m *keyedSM) actions() map[string]func(*rapid.T) {
	return map[string]func(*rapid.T){
		"Schedule": func(t *rapid.T) { m.schedule(t, true) },
		"Add":      func(t *rapid.T) { m.schedule(t, false) },
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
				m.insert(it)
				m.rescheduled++
			}
			m.settle(t)
		},
		"Lookup": func(t *rapid.T) {
			key := m.drawKey(t)
			v, at, ok := m.q.Get(key)
			d, dok := m.q.Deadline(key)
			k := m.find(key)
			if ok != (k >= 0) || dok != ok || m.q.Contains(key) != ok {
				t.Fatalf("Get/Deadline/Contains(%d) = %v/%v/%v, model index %d", key, ok, dok, m.q.Contains(key), k)
			}
			if ok && (v != m.items[k].v || !at.Equal(m.start.Add(m.items[k].at)) || !d.Equal(at)) {
				t.Fatalf("Get(%d) = (%d, %v), Deadline %v, model %+v", key, v, at, d, m.items[k])
			}
		},
		"Poll": func(t *rapid.T) {
			key, v, ok := m.q.Poll()
			if ok != (m.due() > 0) {
				t.Fatalf("Poll ok = %v with %d due", ok, m.due())
			}
			if ok {
				m.takeFront(t, "Poll", []dq.Item[int, int]{{Key: key, Value: v}})
			}
			m.settle(t)
		},
		"DrainExpired": func(t *rapid.T) {
			max := rapid.IntRange(-1, 3).Draw(t, "max")
			n := m.due()
			if max > 0 {
				n = min(n, max)
			}
			got := m.q.DrainExpired(nil, max)
			if len(got) != n {
				t.Fatalf("DrainExpired(%d) = %v, want %d items", max, got, n)
			}
			m.takeFront(t, "DrainExpired", got)
			m.settle(t)
		},
		"Take": func(t *rapid.T) {
			m.startTaker(func(ctx context.Context, id int) kTakerResult {
				key, v, err := m.q.Take(ctx)
				return kTakerResult{id, key, v, err, time.Since(m.start)}
			})
			m.settle(t)
		},
		"CancelTake": func(t *rapid.T) { m.cancelTaker(t, m.settle) },
		"Advance": func(t *rapid.T) {
			advance(t)
			m.settle(t)
		},
		"": m.check,
	}
}

func TestKeyedStateMachine(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		rapid.SyncTest(t, func(t *rapid.T) {
			m := &keyedSM{
				capacity: rapid.IntRange(0, 4).Draw(t, "capacity"),
				start:    time.Now(),
				smTakers: newSMTakers[kTakerResult](),
			}
			m.q = dq.NewKeyed[int, int](dq.WithCapacity(m.capacity))
			defer func() {
				m.q.Close()
				m.waitTakers()
			}()
			t.Repeat(m.actions())

			// The rest leaves through DrainEntries, in delivery order with
			// deadlines, and the index empties with the queue.
			n := len(m.takers)
			m.q.Close()
			for range n {
				if r := <-m.results; !errors.Is(r.err, dq.ErrClosed) {
					t.Fatalf("taker %d after Close: %v", r.taker, r.err)
				}
			}
			rest := m.q.DrainEntries()
			if len(rest) != len(m.items) {
				t.Fatalf("DrainEntries = %v, model %v", rest, m.items)
			}
			for i, e := range rest {
				if e.Key != m.items[i].key || e.Value != m.items[i].v || !e.Deadline.Equal(m.start.Add(m.items[i].at)) {
					t.Fatalf("DrainEntries[%d] = %+v, model %+v", i, e, m.items[i])
				}
			}
			if dq.KeyedIndexLen(m.q) != 0 {
				t.Fatalf("key index not empty after DrainEntries")
			}
		})
	})
}
