package delayqueue_test

import (
	"cmp"
	"context"
	"errors"
	"math"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	dq "github.com/dq-go/delayqueue"
	"pgregory.net/rapid"
)

// ---------------------------------------------------------------------------
// The heap alone, against a sorted-slice model.

type heapItem struct {
	id        int
	at        int64
	seq       int // model offer order: ties leave in this order
	slot, gen uint32
}

func heapItemCmp(a, b heapItem) int {
	return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.seq, b.seq))
}

type heapModel struct {
	h     dq.TestHeap[int]
	items []heapItem // sorted by (at, seq)
	dead  []heapItem // items that left: their handles are stale
	nextI int
	seq   int
}

func (m *heapModel) insert(it heapItem) {
	i, _ := slices.BinarySearchFunc(m.items, it, heapItemCmp)
	m.items = slices.Insert(m.items, i, it)
}

func (m *heapModel) take(k int) heapItem {
	it := m.items[k]
	m.items = slices.Delete(m.items, k, k+1)
	m.dead = append(m.dead, it)
	return it
}

func (m *heapModel) check(t *rapid.T) {
	if err := m.h.CheckInvariants(); err != nil {
		t.Fatalf("invariant: %v", err)
	}
	if m.h.Len() != len(m.items) {
		t.Fatalf("Len = %d, model %d", m.h.Len(), len(m.items))
	}
	if len(m.items) > 0 {
		v, at := m.h.Head()
		if v != m.items[0].id || at != m.items[0].at {
			t.Fatalf("Head = (%d, %d), model (%d, %d)", v, at, m.items[0].id, m.items[0].at)
		}
	}
	// Every live handle finds its own node; every stale one finds nothing.
	for _, it := range m.items {
		i := m.h.Lookup(it.slot, it.gen)
		if i < 0 {
			t.Fatalf("live item %d: Lookup = %d", it.id, i)
		}
		v, at := m.h.Node(i)
		if v != it.id || at != it.at {
			t.Fatalf("Lookup(item %d) -> node %d holding (%d, %d)", it.id, i, v, at)
		}
	}
	for _, it := range m.dead {
		if i := m.h.Lookup(it.slot, it.gen); i >= 0 {
			t.Fatalf("stale handle of item %d: Lookup = %d", it.id, i)
		}
	}
	if i := m.h.Lookup(0, 0); i >= 0 {
		t.Fatalf("zero handle: Lookup = %d", i)
	}
}

func TestHeapProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := &heapModel{}
		if rapid.Bool().Draw(t, "nearWrap") {
			m.h.SetNextSeq(math.MaxUint32 - rapid.Uint32Range(0, 20).Draw(t, "wrapIn"))
		}
		atGen := rapid.Int64Range(-5, 30) // narrow: many ties
		t.Repeat(map[string]func(*rapid.T){
			"push": func(t *rapid.T) {
				at := atGen.Draw(t, "at")
				slot, gen := m.h.Push(m.nextI, at)
				m.insert(heapItem{id: m.nextI, at: at, seq: m.seq, slot: slot, gen: gen})
				m.nextI++
				m.seq++
			},
			"pushExtreme": func(t *rapid.T) {
				at := rapid.SampledFrom([]int64{math.MinInt64, math.MaxInt64, 0}).Draw(t, "at")
				slot, gen := m.h.Push(m.nextI, at)
				m.insert(heapItem{id: m.nextI, at: at, seq: m.seq, slot: slot, gen: gen})
				m.nextI++
				m.seq++
			},
			"pop": func(t *rapid.T) {
				if len(m.items) == 0 {
					t.Skip("empty")
				}
				want := m.take(0)
				if got := m.h.Pop(); got != want.id {
					t.Fatalf("Pop = %d, want %d", got, want.id)
				}
			},
			"removeAt": func(t *rapid.T) {
				if len(m.items) == 0 {
					t.Skip("empty")
				}
				k := rapid.IntRange(0, len(m.items)-1).Draw(t, "k")
				want := m.take(k)
				i := m.h.Lookup(want.slot, want.gen)
				if got := m.h.RemoveAt(i); got != want.id {
					t.Fatalf("RemoveAt(%d) = %d, want %d", i, got, want.id)
				}
			},
			"fix": func(t *rapid.T) {
				if len(m.items) == 0 {
					t.Skip("empty")
				}
				k := rapid.IntRange(0, len(m.items)-1).Draw(t, "k")
				it := m.items[k]
				m.items = slices.Delete(m.items, k, k+1)
				it.at = atGen.Draw(t, "at")
				it.seq = m.seq // counts as newly offered
				m.seq++
				m.h.Fix(m.h.Lookup(it.slot, it.gen), it.at)
				m.insert(it)
			},
			"nearWrap": func(t *rapid.T) {
				if m.h.NextSeq() < math.MaxUint32-100 {
					m.h.SetNextSeq(math.MaxUint32 - rapid.Uint32Range(0, 3).Draw(t, "wrapIn"))
				}
			},
			"": m.check,
		})
		// Empty it: pops come out in model order and the array ends zeroed.
		for len(m.items) > 0 {
			want := m.take(0)
			if got := m.h.Pop(); got != want.id {
				t.Fatalf("final Pop = %d, want %d", got, want.id)
			}
		}
		m.check(t)
		if !m.h.VacatedZero() {
			t.Fatalf("backing array retains vacated nodes")
		}
	})
}

// ---------------------------------------------------------------------------
// The whole Queue as a state machine, on the fake clock of a synctest
// bubble, against a model.

type qItem struct {
	id  int
	at  time.Duration // since the bubble's start
	seq int
	h   dq.Handle
}

type takerResult struct {
	taker int
	v     int
	err   error
	at    time.Duration
}

type queueSM struct {
	q       *dq.Queue[int]
	other   *dq.Queue[int] // another queue, for foreign handles
	start   time.Time
	items   []qItem // sorted by (at, seq)
	stale   []dq.Handle
	foreign []dq.Handle
	nextID  int
	seq     int

	smTakers[takerResult]

	offered, taken, removed uint64
}

func (m *queueSM) now() time.Duration { return time.Since(m.start) }

// reschedule moves item k (it, with its new deadline) in the queue and the
// model: a rescheduled item counts as newly offered for ties.
func (m *queueSM) reschedule(t *rapid.T, k int, it qItem) {
	if !m.q.Reschedule(it.h, m.start.Add(it.at)) {
		t.Fatalf("Reschedule(item %d) = false", it.id)
	}
	m.items = slices.Delete(m.items, k, k+1)
	it.seq = m.seq
	m.seq++
	m.insert(it)
	m.settle(t)
}

func (m *queueSM) insert(it qItem) {
	i, _ := slices.BinarySearchFunc(m.items, it, func(a, b qItem) int {
		return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.seq, b.seq))
	})
	m.items = slices.Insert(m.items, i, it)
}

func (m *queueSM) indexOf(id int) int {
	return slices.IndexFunc(m.items, func(it qItem) bool { return it.id == id })
}

func (m *queueSM) due() int {
	now := m.now()
	n := 0
	for n < len(m.items) && m.items[n].at <= now {
		n++
	}
	return n
}

// settle waits until every goroutine in the bubble is blocked, then
// collects the takers' results and checks them against the model: blocked
// takers must have taken exactly the earliest due items, one each, never
// early; cancelled takers must have returned ctx.Err().
func (m *queueSM) settle(t *rapid.T) {
	synctest.Wait()
	var got []takerResult
	for {
		select {
		case r := <-m.results:
			got = append(got, r)
			continue
		default:
		}
		break
	}
	var vals []int
	for _, r := range got {
		cancelled := m.cancelled[r.taker]
		delete(m.takers, r.taker)
		delete(m.cancelled, r.taker)
		switch {
		case r.err == nil:
			k := m.indexOf(r.v)
			if k < 0 {
				t.Fatalf("taker %d got %d, which is not queued (duplicate or unknown)", r.taker, r.v)
			}
			if r.at < m.items[k].at {
				t.Fatalf("taker %d got %d at %v, before its deadline %v", r.taker, r.v, r.at, m.items[k].at)
			}
			vals = append(vals, r.v)
		case cancelled && errors.Is(r.err, context.Canceled):
		default:
			t.Fatalf("taker %d: %v (cancelled=%v)", r.taker, r.err, cancelled)
		}
	}
	// The takers took the first len(vals) items in delivery order (which
	// taker got which does not matter), and only due ones.
	if len(vals) > len(m.items) {
		t.Fatalf("takers took %d items, model has %d", len(vals), len(m.items))
	}
	want := make([]int, len(vals))
	for i := range vals {
		want[i] = m.items[i].id
		if m.items[i].at > m.now() {
			t.Fatalf("takers took item %d, which is not due", m.items[i].id)
		}
	}
	slices.Sort(vals)
	slices.Sort(want)
	if !slices.Equal(vals, want) {
		t.Fatalf("takers took %v, want the earliest %v", vals, want)
	}
	for range vals {
		m.stale = append(m.stale, m.items[0].h)
		m.items = m.items[1:]
		m.taken++
	}
}

func (m *queueSM) check(t *rapid.T) {
	live := len(m.takers) - len(m.cancelled)
	if live > 0 && m.due() > 0 {
		t.Fatalf("%d takers blocked while %d items are due", live, m.due())
	}
	s := m.q.Stats()
	if s.Len != len(m.items) || s.Offered != m.offered || s.Taken != m.taken || s.Removed != m.removed || s.Drained != 0 {
		t.Fatalf("Stats %+v; model len=%d offered=%d taken=%d removed=%d", s, len(m.items), m.offered, m.taken, m.removed)
	}
	if s.Offered != s.Taken+s.Removed+s.Drained+uint64(s.Len) {
		t.Fatalf("accounting: %+v", s)
	}
	if s.Waiting != len(m.takers) {
		t.Fatalf("Waiting = %d, %d takers blocked", s.Waiting, len(m.takers))
	}
	leader, followers, _ := dq.WaitState(m.q)
	lead := 0
	if leader {
		lead = 1
	}
	if lead+followers != len(m.takers) {
		t.Fatalf("leader %v + %d followers != %d blocked takers", leader, followers, len(m.takers))
	}
	if len(m.takers) > 0 && len(m.items) > 0 && !leader {
		t.Fatalf("items queued and %d takers blocked, but no leader waits on the head", len(m.takers))
	}
	if err := dq.CheckQueue(m.q); err != nil {
		t.Fatalf("invariant: %v", err)
	}
	v, at, ok := m.q.Peek()
	if ok != (len(m.items) > 0) {
		t.Fatalf("Peek ok = %v with %d items", ok, len(m.items))
	}
	if ok && (v != m.items[0].id || !at.Equal(m.start.Add(m.items[0].at))) {
		t.Fatalf("Peek = (%d, %v), model (%d, %v)", v, at, m.items[0].id, m.start.Add(m.items[0].at))
	}
}

func (m *queueSM) drawDeadline(t *rapid.T) time.Duration {
	// Milliseconds near now, past and future, so ties are common.
	return m.now() + time.Duration(rapid.IntRange(-3, 12).Draw(t, "dms"))*time.Millisecond
}

func (m *queueSM) actions() map[string]func(*rapid.T) {
	return map[string]func(*rapid.T){
		"Offer": func(t *rapid.T) {
			at := m.drawDeadline(t)
			h, err := m.q.Offer(m.nextID, m.start.Add(at))
			if err != nil {
				t.Fatalf("Offer: %v", err)
			}
			m.insert(qItem{id: m.nextID, at: at, seq: m.seq, h: h})
			m.nextID++
			m.seq++
			m.offered++
			m.settle(t)
		},
		"Poll": func(t *rapid.T) {
			v, ok := m.q.Poll()
			if m.due() == 0 {
				if ok {
					t.Fatalf("Poll = %d with nothing due", v)
				}
				return
			}
			if !ok || v != m.items[0].id {
				t.Fatalf("Poll = (%d, %v), want %d", v, ok, m.items[0].id)
			}
			m.stale = append(m.stale, m.items[0].h)
			m.items = m.items[1:]
			m.taken++
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
			for i, v := range got {
				if v != m.items[i].id {
					t.Fatalf("DrainExpired(%d) = %v, item %d should be %d", max, got, i, m.items[i].id)
				}
				m.stale = append(m.stale, m.items[i].h)
			}
			m.items = m.items[n:]
			m.taken += uint64(n)
			m.settle(t)
		},
		"Take": func(t *rapid.T) {
			m.startTaker(func(ctx context.Context, id int) takerResult {
				v, err := m.q.Take(ctx)
				return takerResult{id, v, err, time.Since(m.start)}
			})
			m.settle(t)
		},
		"CancelTake": func(t *rapid.T) { m.cancelTaker(t, m.settle) },
		"Remove": func(t *rapid.T) {
			if len(m.items) == 0 {
				t.Skip("empty")
			}
			k := rapid.IntRange(0, len(m.items)-1).Draw(t, "k")
			it := m.items[k]
			v, ok := m.q.Remove(it.h)
			if !ok || v != it.id {
				t.Fatalf("Remove(item %d) = (%d, %v)", it.id, v, ok)
			}
			m.items = slices.Delete(m.items, k, k+1)
			m.stale = append(m.stale, it.h)
			m.removed++
			m.settle(t)
		},
		"RemoveStale": func(t *rapid.T) {
			hs := append(append([]dq.Handle{{}}, m.stale...), m.foreign...)
			h := rapid.SampledFrom(hs).Draw(t, "h")
			if v, ok := m.q.Remove(h); ok {
				t.Fatalf("Remove(stale %v) = %d, true", h, v)
			}
			if m.q.Reschedule(h, m.start) {
				t.Fatalf("Reschedule(stale %v) = true", h)
			}
			m.settle(t)
		},
		"Reschedule": func(t *rapid.T) {
			if len(m.items) == 0 {
				t.Skip("empty")
			}
			k := rapid.IntRange(0, len(m.items)-1).Draw(t, "k")
			it := m.items[k]
			it.at = m.drawDeadline(t)
			m.reschedule(t, k, it)
		},
		// Reschedule onto another item's deadline (a tie) just as the
		// sequence counter wraps, forcing a renumbering inside Reschedule.
		"RescheduleTieAtWrap": func(t *rapid.T) {
			if len(m.items) < 2 {
				t.Skip("need two items")
			}
			k := rapid.IntRange(0, len(m.items)-1).Draw(t, "k")
			j := rapid.IntRange(0, len(m.items)-1).Draw(t, "j")
			it := m.items[k]
			it.at = m.items[j].at
			dq.SetNextSeq(m.q, math.MaxUint32)
			m.reschedule(t, k, it)
		},
		"Advance": func(t *rapid.T) {
			advance(t)
			m.settle(t)
		},
		"NearSeqWrap": func(t *rapid.T) {
			if dq.NextSeq(m.q) < math.MaxUint32-100 {
				dq.SetNextSeq(m.q, math.MaxUint32-rapid.Uint32Range(0, 3).Draw(t, "wrapIn"))
			}
		},
		"": m.check,
	}
}

func TestQueueStateMachine(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		rapid.SyncTest(t, func(t *rapid.T) {
			m := &queueSM{
				q:        dq.New[int](),
				other:    dq.New[int](),
				start:    time.Now(),
				smTakers: newSMTakers[takerResult](),
			}
			if rapid.Bool().Draw(t, "nearWrap") {
				dq.SetNextSeq(m.q, math.MaxUint32-rapid.Uint32Range(0, 10).Draw(t, "wrapIn"))
			}
			for i := range 3 {
				h, _ := m.other.Offer(i, time.Time{})
				m.foreign = append(m.foreign, h)
			}
			// Whatever happens, end every taker so the bubble can exit.
			defer func() {
				m.q.Close()
				m.waitTakers()
			}()
			t.Repeat(m.actions())

			// Close: every blocked taker returns ErrClosed; Drain returns the
			// rest in delivery order.
			n := len(m.takers)
			m.q.Close()
			for range n {
				r := <-m.results
				if !errors.Is(r.err, dq.ErrClosed) {
					t.Fatalf("taker %d after Close: (%d, %v)", r.taker, r.v, r.err)
				}
			}
			m.takers = nil
			var want []int
			for _, it := range m.items {
				want = append(want, it.id)
			}
			if got := m.q.Drain(); !slices.Equal(got, want) {
				t.Fatalf("Drain = %v, want %v", got, want)
			}
			s := m.q.Stats()
			if s.Offered != s.Taken+s.Removed+s.Drained+uint64(s.Len) || s.Len != 0 || s.Waiting != 0 {
				t.Fatalf("final Stats %+v", s)
			}
		})
	})
}
