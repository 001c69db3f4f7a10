package dqweb

import (
	"context"
	"encoding/hex"
	"slices"
	"strconv"
	"strings"

	"github.com/dq-go/delayqueue/redisq"
)

// The summary of a queue's page has a panel of its flow control: every
// rate limit (redisq Queue.SetRateLimit) with its use, when there is room
// and the items waiting for a slot, and every concurrency limit
// (Queue.SetConcurrencyLimit) with the items leased and waiting, sorted by
// key, each with a form to change it and a button to remove it, and forms
// to set one on any key (see limitactions.go).
//
// Stats counts the limits of each kind, so a queue without one pays no
// read for the panel: its limits are read (Queue.RateLimits,
// Queue.ConcurrencyLimits: two round trips per 100 keys) only when Stats
// counts some, and only while there are at most maxLimitRead of the kind,
// which bounds a view's cost; past that the panel gives their number and
// points to dqctl, and the forms still set any key's. A partitioned
// queue has none (redisq refuses LimitKey there): no panel.

// maxLimitRows is how many keys of each kind the panel lists.
const maxLimitRows = 100

// maxLimitRead is the most keys of a kind the panel reads on a view: 20
// round trips. A var for the tests.
var maxLimitRead = 1000

// limitsView is the panel.
type limitsView struct {
	Shown bool // the panel is on the page
	// Counts of each kind, from Stats; Rows listed (at most
	// maxLimitRows, sorted by key), More not listed.
	RateCount, ConcCount int
	Rate                 []rateRow
	Conc                 []concRow
	MoreRate, MoreConc   int
	// TooMany*: more keys of the kind than a view reads (maxLimitRead).
	TooManyRate, TooManyConc bool
	MaxRead                  int
	Err                      string // why the limits could not be read
	// SetRate and SetConc set a limit on a key typed in; no Op in
	// read-only mode or on a partition's page.
	SetRate, SetConc limitForm
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
	Op                   string // rate-limit or concurrency-limit
	Field                string // the field of the limit: rate or concurrency
	KeyX                 string // the key, hex-encoded; "" with NewKey
	NewKey               bool   // the key is typed (field key)
	Value                string // the limit now, to edit
	Label                string // the field's label
}

// limitFormFor is the form of op on the queue of d: of the key keyX
// (hex), or, with newKey, of a key typed in.
func (h *handler) limitFormFor(d *queueData, op string, newKey bool, keyX, value string) limitForm {
	f := limitForm{Prefix: h.opt.Prefix, CSRF: d.CSRF, QueueX: d.QueueX, Op: op, KeyX: keyX, NewKey: newKey, Value: value}
	if op == "rate-limit" {
		f.Field, f.Label = rateField, "N/PER"
	} else {
		f.Field, f.Label = concField, "K"
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

// limitsPanel fills in the panel of the ordinary queue q. A failure to
// read is the panel's error, not the page's.
func (h *handler) limitsPanel(ctx context.Context, q *redisq.Queue, d *queueData) {
	st := d.Stats
	v := limitsView{Shown: true, RateCount: st.RateLimits, ConcCount: st.ConcurrencyLimits, MaxRead: maxLimitRead}
	canSet := !h.opt.ReadOnly
	if canSet && d.Parent == "" {
		// A partition's items come through its partitioned queue, which
		// refuses limit keys: no new limit there, but one set is shown.
		v.SetRate, v.SetConc = h.limitFormFor(d, "rate-limit", true, "", ""), h.limitFormFor(d, "concurrency-limit", true, "", "")
	}
	if d.Parent != "" && v.RateCount+v.ConcCount == 0 {
		v.Shown = false
	}
	read := func() error {
		if v.TooManyRate = v.RateCount > maxLimitRead; v.RateCount > 0 && !v.TooManyRate {
			all, err := q.RateLimits(ctx)
			if err != nil {
				return err
			}
			slices.SortFunc(all, func(a, b redisq.LimitState) int { return strings.Compare(a.Key, b.Key) })
			v.RateCount = len(all)
			if len(all) > maxLimitRows {
				all, v.MoreRate = all[:maxLimitRows], len(all)-maxLimitRows
			}
			for _, s := range all {
				v.Rate = append(v.Rate, h.rateRow(s, d, canSet))
			}
		}
		if v.TooManyConc = v.ConcCount > maxLimitRead; v.ConcCount > 0 && !v.TooManyConc {
			all, err := q.ConcurrencyLimits(ctx)
			if err != nil {
				return err
			}
			slices.SortFunc(all, func(a, b redisq.ConcurrencyState) int { return strings.Compare(a.Key, b.Key) })
			v.ConcCount = len(all)
			if len(all) > maxLimitRows {
				all, v.MoreConc = all[:maxLimitRows], len(all)-maxLimitRows
			}
			for _, s := range all {
				v.Conc = append(v.Conc, h.concRow(s, d, canSet))
			}
		}
		return nil
	}
	if err := read(); err != nil {
		_, msg := h.redisStatus(err)
		v.Err = message("the limits cannot be read: " + msg)
	}
	d.Limits = v
}

func (h *handler) rateRow(s redisq.LimitState, d *queueData, canSet bool) rateRow {
	now := d.Now
	row := rateRow{keyRow: keyRowOf(s.Key), Limit: rateText(s.Limit), Used: s.Used, N: s.Limit.N, Waiting: s.Waiting,
		LastSlot: at(s.LastSlot, now)}
	// Room is the script's now while Used < N: a few ms after Stats.Now.
	row.RoomNow = s.Limit.N == 0 || s.Used < s.Limit.N || !s.Room.After(now)
	if !row.RoomNow {
		row.Full, row.Room = true, at(s.Room, now)
	}
	if canSet {
		keyX := hex.EncodeToString([]byte(s.Key))
		row.HasActions = true
		row.Edit = h.limitFormFor(d, "rate-limit", false, keyX, rateValue(s.Limit))
		a := action{Op: "rate-limit", Queue: d.Name, Key: s.Key, Remove: true, WasRate: s}
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
	return actionForm{Prefix: prefix, CSRF: d.CSRF, Op: a.Op, QueueX: d.QueueX, KeyX: keyX, Limit: a.limitField(),
		Label: label, Confirm: a.question(), Danger: danger}
}
