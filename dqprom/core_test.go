package dqprom_test

import (
	"math"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/dq-go/delayqueue"
	"github.com/dq-go/delayqueue/dqprom"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestQueueCollector(t *testing.T) {
	orders := delayqueue.New[int]()
	defer orders.Close()
	other := delayqueue.New[string]()
	defer other.Close()
	past := time.Now().Add(-time.Second)
	for i := range 3 {
		if _, err := orders.Offer(i, past); err != nil {
			t.Fatal(err)
		}
	}
	h, _ := orders.OfferAfter(9, time.Hour)
	orders.Remove(h)
	if _, ok := orders.Poll(); !ok {
		t.Fatal("nothing due")
	}
	_, _ = other.OfferAfter("x", time.Hour)

	c := dqprom.NewQueueCollector(map[string]dqprom.StatsSource{"orders": orders, "other": other})
	want := `
# HELP delayqueue_items Items queued now.
# TYPE delayqueue_items gauge
delayqueue_items{queue="orders"} 2
delayqueue_items{queue="other"} 1
# HELP delayqueue_offered_total Items accepted by Offer, OfferAfter or Put.
# TYPE delayqueue_offered_total counter
delayqueue_offered_total{queue="orders"} 4
delayqueue_offered_total{queue="other"} 1
# HELP delayqueue_removed_total Items removed by Remove.
# TYPE delayqueue_removed_total counter
delayqueue_removed_total{queue="orders"} 1
delayqueue_removed_total{queue="other"} 0
# HELP delayqueue_taken_total Items handed out by Take, TakeBatch, Poll or DrainExpired.
# TYPE delayqueue_taken_total counter
delayqueue_taken_total{queue="orders"} 1
delayqueue_taken_total{queue="other"} 0
# HELP delayqueue_waiting_takers Goroutines blocked in Take or TakeBatch now.
# TYPE delayqueue_waiting_takers gauge
delayqueue_waiting_takers{queue="orders"} 0
delayqueue_waiting_takers{queue="other"} 0
`
	names := []string{"delayqueue_items", "delayqueue_offered_total", "delayqueue_removed_total",
		"delayqueue_taken_total", "delayqueue_waiting_takers"}
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), names...); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(c); n != 2*10 {
		t.Errorf("%d metrics, want 10 per queue", n)
	}
	if probs, err := testutil.CollectAndLint(c); err != nil || len(probs) > 0 {
		t.Errorf("lint: %v %v", probs, err)
	}
	// Draining shows up at the next scrape: the collector holds no state.
	orders.Drain()
	if err := testutil.CollectAndCompare(c, strings.NewReader(`
# HELP delayqueue_drained_total Items returned by Drain, DrainEntries or Shutdown.
# TYPE delayqueue_drained_total counter
delayqueue_drained_total{queue="orders"} 2
delayqueue_drained_total{queue="other"} 0
`), "delayqueue_drained_total"); err != nil {
		t.Fatal(err)
	}
}

// Lateness, blocked Puts and reschedules, from a Keyed queue in fake time:
// three items handed out 3 ms, 3 ms and 40 ms late land in the buckets
// that hold those values, and the sum is within the histogram's error.
// (c is due after the 3 ms Polls' clock reading, so its Poll reads the
// clock again; see delayqueue.Lateness.)
func TestQueueCollectorLatenessAndPuts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k := delayqueue.NewKeyed[string, int](delayqueue.WithCapacity(3))
		defer k.Close()
		start := time.Now()
		for i, key := range []string{"a", "b", "c"} {
			if _, err := k.Schedule(key, i, start.Add(time.Millisecond)); err != nil {
				t.Fatal(err)
			}
		}
		if !k.Reschedule("c", start.Add(5*time.Millisecond)) {
			t.Fatal("Reschedule c")
		}
		put := make(chan error, 1)
		go func() { _, err := k.Put(t.Context(), "d", 3, start.Add(time.Hour)); put <- err }()
		synctest.Wait()

		c := dqprom.NewQueueCollector(map[string]dqprom.StatsSource{"keyed": k})
		if err := testutil.CollectAndCompare(c, strings.NewReader(`
# HELP delayqueue_blocked_puts Goroutines blocked in Put now, waiting for room in a bounded queue.
# TYPE delayqueue_blocked_puts gauge
delayqueue_blocked_puts{queue="keyed"} 1
# HELP delayqueue_rescheduled_total Successful Reschedules, and Keyed replacements of a queued key.
# TYPE delayqueue_rescheduled_total counter
delayqueue_rescheduled_total{queue="keyed"} 1
`), "delayqueue_blocked_puts", "delayqueue_rescheduled_total"); err != nil {
			t.Fatal(err)
		}

		time.Sleep(4 * time.Millisecond) // 3 ms past the deadline
		for range 2 {
			if _, _, ok := k.Poll(); !ok {
				t.Fatal("Poll: nothing due")
			}
		}
		time.Sleep(41 * time.Millisecond) // 40 ms past c's deadline
		if _, _, ok := k.Poll(); !ok {
			t.Fatal("Poll: nothing due")
		}
		if err := <-put; err != nil {
			t.Fatal(err)
		}

		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(c)
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		var h *dto.Histogram
		for _, mf := range mfs {
			if mf.GetName() == "delayqueue_lateness_seconds" {
				h = mf.GetMetric()[0].GetHistogram()
			}
		}
		if h == nil {
			t.Fatal("no delayqueue_lateness_seconds")
		}
		if h.GetSampleCount() != 3 {
			t.Errorf("count %d, want 3", h.GetSampleCount())
		}
		if sum := h.GetSampleSum(); math.Abs(sum-0.046)/0.046 > 0.0625 {
			t.Errorf("sum %gs, want 0.046s within 6.25%%", sum)
		}
		// Cumulative counts: 0 below 3 ms, 2 from there, 3 from 40 ms on.
		for _, b := range h.GetBucket() {
			le, n := b.GetUpperBound(), b.GetCumulativeCount()
			want := uint64(0)
			switch {
			case le >= 0.040:
				want = 3
			case le >= 0.003:
				want = 2
			}
			if n != want {
				t.Errorf("le=%g: %d, want %d", le, n, want)
			}
		}
	})
}
