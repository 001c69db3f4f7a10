package dqweb

import (
	"context"
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"

	"github.com/dq-go/delayqueue/redisq"
)

// The summary of a queue's page has a panel of its flow control: the rate
// limit of the whole queue (redisq Queue.SetQueueRateLimit) with its use
// and when there is room, its keys' rate limits (Queue.SetRateLimit)
// with their use, when there is room and the items waiting for a slot,
// and its concurrency limits (Queue.SetConcurrencyLimit) with the items
// leased and waiting, each with a form to change it and a button to
// remove it, forms to set one on any key or on the queue (see
// limitactions.go), and a lookup of one key's limits
// (queue?q=NAME&limitkey=KEY: RateLimitState and ConcurrencyLimitState,
// whatever the number of keys).
//
// It lists the maxLimitRows busiest keys of each kind, the most waiting
// items first, then the idle ones by key (Queue.TopRateLimits,
// TopConcurrencyLimits), and says how many others there are and the
// items they hold. Stats counts the limits of each kind and has the
// queue's own, so a queue without one pays no read for the panel; the
// queue's own costs one round trip (QueueRateLimit), the keys' two per
// 500 keys, of the first maxLimitRead of a kind (past them the panel
// says how many it did not read; the lookup finds any), and one per 50
// keys listed. A partitioned queue has none (redisq refuses LimitKey
// there, and has no SetQueueRateLimit): no panel. A partition's page
// shows the limits set on it, with their actions, but no form for a new
// one: its items come through the partitioned queue.

// maxLimitRows is how many keys of each kind the panel lists.
const maxLimitRows = 100

// maxLimitRead is the most keys of a kind the panel counts the waiting
// items of on a view: 10 pages of 500 keys, 20 round trips of under 1 ms
// of Redis time each. A var for the tests.
var maxLimitRead = 5000

// limitsView is the panel.
type limitsView struct {
	Shown bool // the panel is on the page
	// Counts of each kind (Stats', then the read's); Rows listed (at most
	// maxLimitRows, the busiest first); More the keys read and not
	// listed, MoreWaiting their waiting items; Unread the keys past
	// maxLimitRead, not read.
	RateCount, ConcCount             int
	Rate                             []rateRow
	Conc                             []concRow
	MoreRate, MoreConc               int
	MoreRateWaiting, MoreConcWaiting int
	UnreadRate, UnreadConc           int
	MaxRead                          int
	Err                              string // why the limits could not be read
	// Queue is the queue's own rate limit and its use, when it has one
	// (Key and Waiting unused).
	Queue *rateRow
	// SetRate and SetConc set a limit on a key typed in, SetQueue the
	// queue's own when it has none; no Op in read-only mode or on a
	// partition's page.
	SetRate, SetConc, SetQueue limitForm
	// Lookup is the key looked up (limitkey), and its limits; Prefix
	// and QueueX are the lookup form's.
	Lookup         lookupView
	Prefix, QueueX string
}

// lookupView is the lookup of one key's limits: the form, and when a key
// was asked for, its state.
type lookupView struct {
	Asked    bool
	KeyShown string
	Value    string // the key, for the form's text field (fillable)
	Rate     *rateRow
	Conc     *concRow
	Err      string
}

// rateRow is one rate limit as the panel shows it.
type rateRow struct {
	keyRow
	Limit      string // "100 per 1m"
	Used, N    int    // claims in the window that ends now, of N
	Full       bool   // no claim may be made now
	Room       when   // when one may be (unset with RoomNow)
	RoomNow    bool
	Waiting    int
	LastSlot   when // the last slot given to a waiting item
	Edit       limitForm
	Remove     actionForm
	HasActions bool
}

// concRow is one concurrency limit as the panel shows it.
type concRow struct {
	keyRow
	Limit, Leased, Waiting int
	// Taken counts the places taken: the items leased and those given a
	// place, due, not yet leased. Removing: a removal of the limit did
	// not end (dqctl concurrency-limit KEY none ends it).
	Taken      int
	Removing   bool
	Full       bool
	Edit       limitForm
	Remove     actionForm
	HasActions bool
}

// keyRow is a limit key as shown: escaped like ids; "" is the items
// without a limit key.
type keyRow struct {
	KeyShown string
	NoKey    bool
	Long     bool
}

func keyRowOf(key string) keyRow {
	k := keyRow{KeyShown: shown(key), NoKey: key == ""}
	k.Long = len(k.KeyShown) > longID
	return k
}

// limitForm is a form that sets a limit from what the user types: it has
// no confirmed field, so the server asks on its confirmation page, which
// shows the limit as parsed (a dialog could only repeat the raw text).
type limitForm struct {
	Prefix, CSRF, QueueX string
	Op                   string // rate-limit, concurrency-limit or queue-rate-limit
	Field                string // the field of the limit: rate or concurrency
	KeyX                 string // the key, hex-encoded; "" with NewKey or Whole
	NewKey               bool   // the key is typed (field key)
	Whole                bool   // the queue's own rate limit: no key
	Value                string // the limit now, to edit; "" for a new one
	Label                string // the field's label
}

// limitFormFor is the form of op on the queue of d: of the key keyX
// (hex), or, with newKey, of a key typed in; queue-rate-limit has no key.
func (h *handler) limitFormFor(d *queueData, op string, newKey bool, keyX, value string) limitForm {
	f := limitForm{Prefix: h.opt.Prefix, CSRF: d.CSRF, QueueX: d.QueueX, Op: op, KeyX: keyX, NewKey: newKey, Whole: op == queueRateOp, Value: value}
	if op == "concurrency-limit" {
		f.Field, f.Label = concField, "K"
	} else {
		f.Field, f.Label = rateField, "N/PER"
	}
	return f
}

// limitSubject names the key of a limit in a sentence.
func limitSubject(key string) string {
	if key == "" {
		return "the items without a limit key"
	}
	return "key " + quoted(key)
}

// rateText is l as pages write it: "100 per 1m", or "none".
func rateText(l redisq.RateLimit) string {
	if l.N == 0 {
		return "none"
	}
	return num(int64(l.N)) + " per " + short(l.Per)
}

// rateValue is l as the forms take it: "100/1m", or "none".
func rateValue(l redisq.RateLimit) string {
	if l.N == 0 {
		return "none"
	}
	return strconv.Itoa(l.N) + "/" + short(l.Per)
}

// limitsPanel fills in the panel of the ordinary queue q, and the lookup
// of the key r asks for (limitkey). A failure to read is the panel's
// error, not the page's.
func (h *handler) limitsPanel(ctx context.Context, r *http.Request, q *redisq.Queue, d *queueData) {
	st := d.Stats
	v := limitsView{Shown: true, RateCount: st.RateLimits, ConcCount: st.ConcurrencyLimits, MaxRead: maxLimitRead,
		Prefix: h.opt.Prefix, QueueX: d.QueueX}
	canSet := !h.opt.ReadOnly
	// A partition's items come through its partitioned queue, which
	// refuses limit keys and has no rate limit of its own: no new limit
	// there, but one set is shown.
	canAdd := canSet && d.Parent == ""
	if canAdd {
		v.SetRate, v.SetConc = h.limitFormFor(d, "rate-limit", true, "", ""), h.limitFormFor(d, "concurrency-limit", true, "", "")
	}
	if d.Parent != "" && v.RateCount+v.ConcCount == 0 && st.QueueRateLimit.N == 0 {
		v.Shown = false
	}
	queueSet := st.QueueRateLimit.N > 0
	read := func() error {
		if queueSet {
			s, err := q.QueueRateLimit(ctx)
			if err != nil {
				return err
			}
			if queueSet = s.Limit.N > 0; queueSet { // else removed since the Stats
				row := h.rateRowOf(queueRateOp, s, d, canSet)
				v.Queue = &row
			}
		}
		if v.RateCount > 0 {
			top, tot, err := q.TopRateLimits(ctx, maxLimitRows, maxLimitRead)
			if err != nil {
				return err
			}
			v.RateCount, v.MoreRate, v.MoreRateWaiting, v.UnreadRate = tot.Keys, tot.Omitted, tot.OmittedWaiting, tot.Keys-tot.Read
			for _, s := range top {
				v.Rate = append(v.Rate, h.rateRow(s, d, canSet))
			}
		}
		if v.ConcCount > 0 {
			top, tot, err := q.TopConcurrencyLimits(ctx, maxLimitRows, maxLimitRead)
			if err != nil {
				return err
			}
			v.ConcCount, v.MoreConc, v.MoreConcWaiting, v.UnreadConc = tot.Keys, tot.Omitted, tot.OmittedWaiting, tot.Keys-tot.Read
			for _, s := range top {
				v.Conc = append(v.Conc, h.concRow(s, d, canSet))
			}
		}
		return nil
	}
	if err := read(); err != nil {
		_, msg := h.redisStatus(err)
		v.Err = message("the limits cannot be read: " + msg)
	}
	if canAdd && !queueSet {
		v.SetQueue = h.limitFormFor(d, queueRateOp, false, "", "")
	}
	if key, asked := r.URL.Query()["limitkey"]; asked {
		v.Lookup = h.lookup(ctx, q, d, key[0], canSet)
	}
	d.Limits = v
}

// lookup reads key's limits for the panel's lookup: one round trip per
// kind, whatever the number of keys.
func (h *handler) lookup(ctx context.Context, q *redisq.Queue, d *queueData, key string, canSet bool) lookupView {
	l := lookupView{Asked: true, KeyShown: limitSubject(key), Value: fillable(key)}
	if len(key) > redisq.MaxLimitKeyLen {
		l.Err = fmt.Sprintf("A limit key has at most %s bytes; this one has %s.", num(redisq.MaxLimitKeyLen), num(int64(len(key))))
		return l
	}
	rs, err := q.RateLimitState(ctx, key)
	var cs redisq.ConcurrencyState
	if err == nil {
		cs, err = q.ConcurrencyLimitState(ctx, key)
	}
	if err != nil {
		_, msg := h.redisStatus(err)
		l.Err = message("The key's limits cannot be read: " + msg)
		return l
	}
	if rs.Limit.N > 0 {
		row := h.rateRow(rs, d, canSet)
		l.Rate = &row
	}
	if cs.Limit > 0 || cs.Removing {
		row := h.concRow(cs, d, canSet)
		l.Conc = &row
	}
	return l
}

func (h *handler) rateRow(s redisq.LimitState, d *queueData, canSet bool) rateRow {
	return h.rateRowOf("rate-limit", s, d, canSet)
}

// rateRowOf is the row of the rate limit that op sets: a key's
// (rate-limit, the key s.Key) or the queue's own (queue-rate-limit).
func (h *handler) rateRowOf(op string, s redisq.LimitState, d *queueData, canSet bool) rateRow {
	now := d.Now
	row := rateRow{keyRow: keyRowOf(s.Key), Limit: rateText(s.Limit), Used: s.Used, N: s.Limit.N, Waiting: s.Waiting,
		LastSlot: at(s.LastSlot, now)}
	// Room is the script's now while Used < N: a few ms after Stats.Now.
	row.RoomNow = s.Limit.N == 0 || s.Used < s.Limit.N || !s.Room.After(now)
	if !row.RoomNow {
		row.Full, row.Room = true, at(s.Room, now)
	}
	if canSet {
		keyX := ""
		if op != queueRateOp {
			keyX = hex.EncodeToString([]byte(s.Key))
		}
		row.HasActions = true
		row.Edit = h.limitFormFor(d, op, false, keyX, rateValue(s.Limit))
		a := action{Op: op, Queue: d.Name, Key: s.Key, Remove: true, WasRate: s}
		row.Remove = limitRemoveForm(h.opt.Prefix, d, a, keyX)
	}
	return row
}

func (h *handler) concRow(s redisq.ConcurrencyState, d *queueData, canSet bool) concRow {
	row := concRow{keyRow: keyRowOf(s.Key), Limit: s.Limit, Leased: s.Leased, Waiting: s.Waiting, Taken: s.Leased + s.Granted,
		Full: s.Limit > 0 && s.Leased+s.Granted >= s.Limit, Removing: s.Removing}
	if canSet {
		keyX := hex.EncodeToString([]byte(s.Key))
		row.HasActions = true
		row.Edit = h.limitFormFor(d, "concurrency-limit", false, keyX, strconv.Itoa(s.Limit))
		a := action{Op: "concurrency-limit", Queue: d.Name, Key: s.Key, Remove: true, WasConc: s}
		row.Remove = limitRemoveForm(h.opt.Prefix, d, a, keyX)
	}
	return row
}

// limitRemoveForm is the button that removes a limit: nothing to type, so
// it asks with a dialog, like the other buttons.
func limitRemoveForm(prefix string, d *queueData, a action, keyX string) actionForm {
	label, danger := a.button()
	return actionForm{Prefix: prefix, CSRF: d.CSRF, Op: a.Op, QueueX: d.QueueX, KeyX: keyX, NoKey: !a.HasKey(), Limit: a.limitField(),
		Label: label, Confirm: a.question(), Danger: danger}
}
