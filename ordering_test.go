package delayqueue_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	dq "github.com/dq-go/delayqueue"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Ordering: items leave in deadline order, equal deadlines in offer order (a
// Reschedule counts as a new offer), through every exit and across the wrap
// of the offer counter.

// JSR-166 TCK: populatedQueue / testPoll / testTake in order.
func TestPopulatedQueueLeavesInDeadlineOrder(t *testing.T) {
	q := dq.New[int]()
	base := time.Now().Add(-time.Hour)
	perm := rand.Perm(200)
	for _, i := range perm {
		offer(t, q, i, base.Add(time.Duration(i)*time.Millisecond))
	}
	assert.Equal(t, 200, q.Len())
	got := pollAll(q)
	want := make([]int, 200)
	for i := range want {
		want[i] = i
	}
	assert.Equal(t, want, got)
	_, ok := q.Poll()
	assert.False(t, ok)
	checkAccounting(t, q)
}

func TestEqualDeadlinesLeaveFIFO(t *testing.T) {
	q := dq.New[string]()
	at := time.Now().Add(-time.Second)
	earlier := at.Add(-time.Millisecond)
	var want []string
	for i := range 50 {
		offer(t, q, fmt.Sprint("t", i), at)
	}
	for i := range 50 {
		offer(t, q, fmt.Sprint("e", i), earlier)
		want = append(want, fmt.Sprint("e", i))
	}
	for i := range 50 {
		want = append(want, fmt.Sprint("t", i))
	}
	assert.Equal(t, want, pollAll(q))
}

func TestEqualDeadlinesFIFOThroughEveryExit(t *testing.T) {
	at := time.Now().Add(-time.Second)
	mk := func() *dq.Queue[int] {
		q := dq.New[int]()
		for i := range 20 {
			offer(t, q, i, at)
		}
		return q
	}
	want := make([]int, 20)
	for i := range want {
		want[i] = i
	}
	assert.Equal(t, want, mk().Drain(), "Drain")
	assert.Equal(t, want, mk().DrainExpired(nil, 0), "DrainExpired")
	b, err := mk().TakeBatch(context.Background(), nil, 0)
	require.NoError(t, err)
	assert.Equal(t, want, b, "TakeBatch")
	q := mk()
	var took []int
	for range 20 {
		v, err := q.Take(context.Background())
		require.NoError(t, err)
		took = append(took, v)
	}
	assert.Equal(t, want, took, "Take")
}

func TestRescheduleCountsAsNewlyOfferedForTies(t *testing.T) {
	q := dq.New[string]()
	at := time.Now().Add(-time.Second)
	ha := offer(t, q, "a", at)
	offer(t, q, "b", at)
	offer(t, q, "c", at)
	require.True(t, q.Reschedule(ha, at)) // same deadline: goes behind b and c
	assert.Equal(t, []string{"b", "c", "a"}, pollAll(q))

	// Rescheduling onto another item's deadline puts it behind that item.
	hx := offer(t, q, "x", at.Add(-time.Millisecond))
	offer(t, q, "y", at)
	require.True(t, q.Reschedule(hx, at))
	assert.Equal(t, []string{"y", "x"}, pollAll(q))

	// Rescheduling earlier moves it to the front; later moves it back.
	h1 := offer(t, q, "1", at)
	h2 := offer(t, q, "2", at)
	offer(t, q, "3", at)
	require.True(t, q.Reschedule(h2, at.Add(-time.Millisecond)))
	require.True(t, q.Reschedule(h1, at.Add(time.Millisecond)))
	assert.Equal(t, []string{"2", "3", "1"}, pollAll(q))
}

func TestDrainReturnsEverythingInDeliveryOrder(t *testing.T) {
	q := dq.New[int]()
	now := time.Now()
	offer(t, q, 3, now.Add(time.Hour))
	offer(t, q, 1, now.Add(-time.Hour))
	offer(t, q, 4, time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC))
	offer(t, q, 0, time.Time{})
	offer(t, q, 2, now.Add(time.Minute))
	assert.Equal(t, []int{0, 1, 2, 3, 4}, q.Drain())
	assert.Nil(t, q.Drain(), "Drain of an empty queue is nil")
	assert.Equal(t, uint64(5), q.Stats().Drained)
	checkAccounting(t, q)
}

// TestSeqWrapKeepsOrder sets the heap's offer counter next to 2^32 so that
// it wraps (and the heap renumbers) in the middle of the test.
func TestSeqWrapKeepsOrder(t *testing.T) {
	q := dq.New[int]()
	at := time.Now().Add(-time.Second)
	for i := range 10 {
		offer(t, q, i, at)
	}
	dq.SetNextSeq(q, math.MaxUint32-5)
	for i := 10; i < 30; i++ {
		offer(t, q, i, at)
	}
	assert.Less(t, dq.NextSeq(q), uint32(1000), "the counter must have been renumbered")
	// Interleave a few earlier and later deadlines.
	offer(t, q, -1, at.Add(-time.Millisecond))
	offer(t, q, 100, at.Add(time.Millisecond))
	want := []int{-1}
	for i := range 30 {
		want = append(want, i)
	}
	want = append(want, 100)
	assert.Equal(t, want, pollAll(q))
	checkAccounting(t, q)
}

// TestRescheduleDuringSeqRenumber pins a bug: when Reschedule's fresh
// sequence number triggered the renumbering, heap.fix wrote the new number
// to whichever node the renumbering's sort had moved into the rescheduled
// node's old index: the rescheduled item kept its old tie position and an
// unrelated item was sent to the back of its ties.
func TestRescheduleDuringSeqRenumber(t *testing.T) {
	q := dq.New[string]()
	at := time.Now().Add(-time.Second)
	hc := offer(t, q, "c", at.Add(time.Millisecond)) // index 0
	offer(t, q, "a", at)                             // becomes the root; c moves to index 1
	offer(t, q, "b", at)
	dq.SetNextSeq(q, math.MaxUint32) // the next seq renumbers
	require.True(t, q.Reschedule(hc, at))
	// c counts as newly offered: behind a and b.
	assert.Equal(t, []string{"a", "b", "c"}, pollAll(q))
	checkAccounting(t, q)
}

func TestRescheduleAcrossSeqWrapManyTimes(t *testing.T) {
	q := dq.New[int]()
	at := time.Now().Add(-time.Second)
	hs := make([]dq.Handle, 40)
	order := make([]int, 0, 40)
	for i := range hs {
		hs[i] = offer(t, q, i, at.Add(time.Duration(i%3)*time.Millisecond))
	}
	// Every item gets rescheduled onto the same deadline in a random
	// order, with the counter wrapping every few reschedules.
	for k, i := range rand.Perm(len(hs)) {
		if k%7 == 0 {
			dq.SetNextSeq(q, math.MaxUint32-uint32(k%3))
		}
		require.True(t, q.Reschedule(hs[i], at))
		order = append(order, i)
		require.NoError(t, dq.CheckQueue(q))
	}
	assert.Equal(t, order, pollAll(q))
}
