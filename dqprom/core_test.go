package dqprom_test

import (
	"strings"
	"testing"
	"time"

	"github.com/dq-go/delayqueue"
	"github.com/dq-go/delayqueue/dqprom"
	"github.com/prometheus/client_golang/prometheus/testutil"
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
	if n := testutil.CollectAndCount(c); n != 2*7 {
		t.Errorf("%d metrics, want 7 per queue", n)
	}
	if probs, err := testutil.CollectAndLint(c); err != nil || len(probs) > 0 {
		t.Errorf("lint: %v %v", probs, err)
	}
	// Draining shows up at the next scrape: the collector holds no state.
	orders.Drain()
	if err := testutil.CollectAndCompare(c, strings.NewReader(`
# HELP delayqueue_drained_total Items returned by Drain.
# TYPE delayqueue_drained_total counter
delayqueue_drained_total{queue="orders"} 2
delayqueue_drained_total{queue="other"} 0
`), "delayqueue_drained_total"); err != nil {
		t.Fatal(err)
	}
}
