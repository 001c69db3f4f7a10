package dqweb

import "github.com/dq-go/delayqueue/redisq"

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
