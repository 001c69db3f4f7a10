package dqweb

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/dq-go/delayqueue/redisq"
)

// FormatPayload is formatPayload.
func FormatPayload(p []byte, size, limit int) (kind, text string, truncated bool) {
	v := formatPayload(p, size, limit)
	return v.Kind, v.Text, v.Truncated
}

// Shown, ShownReason, Quoted and Message are the display functions.
var (
	Shown       = shown
	ShownReason = shownReason
	Quoted      = quoted
	Message     = message
)

// Rates is the handler's memory of recent Stats readings.
type Rates struct{ r *rates }

func NewRates() Rates { return Rates{newRates()} }

// Observe is rates.observe.
func (r Rates) Observe(name string, st redisq.Stats) (known bool, enq, del float64, late redisq.Lateness, recent bool) {
	v := r.r.observe(name, st)
	return v.Known, v.Enqueued, v.Delivered, v.Lateness, v.Recent
}

// RateView is what observe returns, in part.
type RateView struct {
	Known, ErrKnown   bool
	Acked, Failed     float64
	ErrorRate         float64
	History           int      // points
	RatePoints, Paths []string // per series of the rates chart: points, path data
}

// ObserveView is rates.observe, with the history charts drawn.
func (r Rates) ObserveView(name string, st redisq.Stats) RateView {
	v := r.r.observe(name, st)
	rc, _ := historyCharts(v.History, st.Now)
	out := RateView{Known: v.Known, ErrKnown: v.ErrKnown, Acked: v.Acked, Failed: v.Failed, ErrorRate: v.ErrorRate, History: len(v.History)}
	for _, s := range rc.Series {
		out.RatePoints = append(out.RatePoints, fmt.Sprint(s.Class, "=", s.Points))
		out.Paths = append(out.Paths, s.Path)
	}
	return out
}

// ParseCursor is parseCursor.
var ParseCursor = parseCursor

// BadTable is badTable.
var BadTable = badTable

// BasicAuthAt is BasicAuthWith with its clock.
func BasicAuthAt(h http.Handler, user, password string, opt AuthOptions, now func() time.Time) http.Handler {
	return basicAuth(h, user, password, opt, now)
}

// AuthTracked is how many clients and /48s h, from BasicAuthAt, counts.
func AuthTracked(h http.Handler) int { return h.(*authHandler).lim.tracked() }

// SetDeadReasonScan sets how many dead items the dead tab groups, until
// the test ends.
func SetDeadReasonScan(t testing.TB, n int64) {
	old := deadReasonScan
	deadReasonScan = n
	t.Cleanup(func() { deadReasonScan = old })
}

// SetMaxSorted sets how many queues the overview sorts, until the test
// ends.
func SetMaxSorted(t testing.TB, n int) {
	old := maxSorted
	maxSorted = n
	t.Cleanup(func() { maxSorted = old })
}

// SetMaxLimitRead sets how many limits of a kind the panel reads, until
// the test ends.
func SetMaxLimitRead(t testing.TB, n int) {
	old := maxLimitRead
	maxLimitRead = n
	t.Cleanup(func() { maxLimitRead = old })
}
