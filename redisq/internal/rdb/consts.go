package rdb

// Bounds that the scripts and the Go code share (placeholders in lua/).
const (
	// ScriptBatch bounds the work of one claim script whatever the
	// options: at most this many expired leases and this many due items.
	ScriptBatch = 100
	// MaxDueMS is the latest due time stored (about year 287,000):
	// 2^53-1 ms, the largest integer a Lua number (a double) holds
	// exactly and well under the 1e17 from which Redis receives it as
	// "1e+17". Due times past it are stored as it; MinDueMS mirrors it in
	// the past.
	MaxDueMS = 1<<53 - 1
	MinDueMS = -MaxDueMS
	// TombstoneMS is how long an applied ack (its tombstone) and the reply
	// of a call that deleted its item are remembered: long enough for a
	// client's own retries after a lost reply.
	TombstoneMS = 30000
	// ListBytes bounds the payloads one List page copies: the page ends
	// after the item that reaches it. It is also the largest payload
	// GetPrefix cuts a prefix from.
	ListBytes = 1 << 20
	// MaxFilterScan is how many dead items one List page with a reason
	// examines.
	MaxFilterScan = 1000
	// LatenessCapMS caps the lateness one delivery adds to the sum (about
	// 2,850 years), so one claim's sum of at most ScriptBatch deliveries
	// stays an integer a Lua number holds exactly.
	LatenessCapMS = (1<<53 - 1) / ScriptBatch
)

// LatenessBoundsMS are the inclusive upper bounds, in milliseconds, of the
// lateness histogram's buckets; a last bucket holds everything later. Redis
// TIME is read to the millisecond, so 0 means "on time to the millisecond".
// The histogram is a hash with one field per bucket (the bound, or "inf")
// plus "sum": a fixed, small size whatever the traffic.
var LatenessBoundsMS = []int64{0, 1, 2, 5, 10, 25, 50, 100, 250, 500,
	1000, 2500, 5000, 10000, 30000, 60000, 300000, 3600000}
