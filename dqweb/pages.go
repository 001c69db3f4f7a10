package dqweb

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dq-go/delayqueue/redisq"
	"github.com/redis/go-redis/v9"
)

// Every page does bounded work whatever the queue's size: Stats is
// O(log n), the due chart 62 range counts, each list one page (List is
// O(log n + page)), and payloads are read with GetPrefix only when they
// are at most ItemPayloadBytes (previews: previewScan), within the
// handler's budget of payload bytes a second. The overview's list of
// queues, without Options.Queues, is redisq.ListQueues (the registry
// {dq}:queues: its cost grows with the number of queues, not of keys),
// reused for Options.QueueListTTL; it reads at most 100 queues a page
// (sorted by a figure, every listed queue up to maxSorted). A queue's
// page also reads its workers' heartbeats (bounded by redisq) and its
// registrations, and the dead tab the grouping of at most deadReasonScan
// dead items.

// MaxName is the longest queue name or id the dashboard opens or acts on:
// longer ones are listed (cut, not linked, without actions) and a request
// naming one is refused with 400 before Redis is asked; dqctl handles
// them. It keeps every link and form within a few tens of KiB.
const MaxName = 8 << 10

// ItemPayloadBytes is the largest payload the item page reads (whole):
// a larger one is shown by its size, and `dqctl show` prints it. Redis
// has no ranged read of a hash field: reading any part of a payload
// copies all of it on Redis' main thread.
const ItemPayloadBytes = 64 << 10

// DefaultPayloadBytesPerSecond is the default of
// Options.PayloadBytesPerSecond.
const DefaultPayloadBytesPerSecond = 4 << 20

// MaxPayloadReads is how many payload reads (with their formatting) run
// at once per handler; more wait, within Options.Timeout. With
// ItemPayloadBytes and the formatting bounds, that keeps the memory all
// payload reads take at once to a few MiB.
const MaxPayloadReads = 4

func (h *handler) queueURL(name string) string {
	if len(name) > MaxName {
		return ""
	}
	return h.opt.Prefix + "queue?" + url.Values{"q": {name}}.Encode()
}

// tabURL is the queue's page showing state (0: the summary).
func (h *handler) tabURL(name string, state redisq.State) string {
	u := h.queueURL(name)
	if u != "" && state != 0 {
		u += "&state=" + state.String()
	}
	return u
}

func (h *handler) itemURL(name, id string) string {
	if len(name) > MaxName || len(id) > MaxName {
		return ""
	}
	return h.opt.Prefix + "item?" + url.Values{"q": {name}, "id": {id}}.Encode()
}

// checkName returns why the dashboard refuses a queue name or id (what
// says which), or nil: these are 400s, decided without Redis.
func checkName(what, s string) error {
	switch {
	case s == "":
		return fmt.Errorf("no %s given", what)
	case len(s) > MaxName:
		return fmt.Errorf("%s %s is too long for the dashboard (%d bytes; at most %d): use dqctl", what, quoted(s), len(s), MaxName)
	case what == "queue name" && strings.ContainsAny(s, "{}"):
		return fmt.Errorf("bad queue name %s: names are non-empty and hold no '{' or '}'", quoted(s))
	}
	return nil
}

// errBusy: every payload read token stayed taken while the request lasted.
var errBusy = errors.New("the dashboard is busy reading other payloads; try again")

// redisStatus returns the HTTP status and the description of a failed
// Redis call: 504 when the page's time ran out, 502 when Redis answered
// with an error, 503 when it could not be reached (a dial that timed out
// included, or the dashboard was too busy).
func (h *handler) redisStatus(err error) (int, string) {
	var reply redis.Error
	var nerr net.Error
	switch {
	case errors.Is(err, errBusy):
		return http.StatusServiceUnavailable, err.Error()
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusGatewayTimeout, fmt.Sprintf("Redis did not answer within %v (%v)", h.opt.Timeout, err)
	case errors.As(err, &nerr) && nerr.Timeout() && !strings.Contains(err.Error(), "dial"):
		return http.StatusGatewayTimeout, fmt.Sprintf("Redis did not answer in time (%v)", err)
	case errors.As(err, &reply):
		return http.StatusBadGateway, fmt.Sprintf("Redis answered with an error: %v", err)
	}
	return http.StatusServiceUnavailable, fmt.Sprintf("Redis is unreachable: %v", err)
}

// redisFail renders the error page for err, a failure of what.
func (h *handler) redisFail(w http.ResponseWriter, r *http.Request, err error, what string) {
	status, msg := h.redisStatus(err)
	h.failStatus(w, r, status, "%s: %s", what, msg)
}

// failStatus is fail, with Retry-After on a 503.
func (h *handler) failStatus(w http.ResponseWriter, r *http.Request, status int, format string, a ...any) {
	if status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "5")
	}
	h.fail(w, r, status, format, a...)
}

// open opens queue name without checking that it exists.
func (h *handler) open(ctx context.Context, name string) (*redisq.Queue, error) {
	return redisq.New(ctx, h.c, name, redisq.WithEvictionCheck(redisq.EvictionIgnore), redisq.WithoutRegistry())
}

// queue opens the queue name and checks that it exists; on failure it
// renders the error page and returns nil.
func (h *handler) queue(ctx context.Context, w http.ResponseWriter, r *http.Request, name string) *redisq.Queue {
	if err := checkName("queue name", name); err != nil {
		h.fail(w, r, http.StatusBadRequest, "%v", err)
		return nil
	}
	q, err := h.open(ctx, name)
	var ok bool
	if err == nil {
		ok, err = q.Exists(ctx)
	}
	switch {
	case err != nil:
		h.redisFail(w, r, err, "reading queue "+quoted(name))
		return nil
	case !ok:
		h.fail(w, r, http.StatusNotFound, "no queue named %s on this server", quoted(name))
		return nil
	}
	return q
}

// offset parses the query parameter key as a list offset (default 0).
func offset(r *http.Request, key string) int64 {
	n, err := strconv.ParseInt(r.URL.Query().Get(key), 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// queueRow is one queue of the overview, and the head of its page.
type queueRow struct {
	Name  string // exact
	Shown string // as shown (see shown)
	URL   string // "" when the name is too long to open
	Err   string // why the row could not be read
	// status is the HTTP status of Err: 400 for a name the dashboard
	// refuses, 5xx for Redis.
	status int
	Stats  redisq.Stats
	Rates  rateView
	// Of a partitioned queue: its partition count, how many are paused,
	// and each one's figures (Stats holds their sums).
	Parts       int
	PausedParts int
	PartRows    []partRow
	// PausedSince is when it was paused, "" when not paused or unknown.
	PausedSince when
	// On the overview, of a queue with due items: the warning when no
	// worker is live where items are due, and its badge (see noWorker).
	NoWorker, NoWorkerBadge string
}

// row reads the row of the ordinary queue name; with live (the overview),
// when items are due, its workers too (see noWorker).
func (h *handler) row(ctx context.Context, name string, live bool) queueRow {
	row := queueRow{Name: name, Shown: shown(name), URL: h.queueURL(name)}
	if err := checkName("queue name", name); err != nil {
		row.Err, row.status = message(err.Error()), http.StatusBadRequest
		return row
	}
	q, err := h.open(ctx, name)
	if err == nil {
		row.Stats, err = q.Stats(ctx)
	}
	if err != nil {
		var msg string
		row.status, msg = h.redisStatus(err)
		row.Err = message(msg)
		return row
	}
	row.Rates = h.rates.observe(name, row.Stats)
	row.PausedSince = at(row.Stats.PausedSince, row.Stats.Now)
	if live && row.Stats.DueBacklog > 0 {
		if ws, err := q.Workers(ctx); err == nil {
			row.NoWorker, row.NoWorkerBadge = noWorker(row.Stats, nil, ws)
		}
	}
	return row
}

func (h *handler) overview(ctx context.Context, w http.ResponseWriter, r *http.Request) {
	sorting, err := parseSort(r.URL.Query())
	if err != nil {
		h.fail(w, r, http.StatusBadRequest, "%v", err)
		return
	}
	list := &listing{names: h.opt.Queues, probe: true}
	if len(list.names) == 0 {
		var err error
		list, err = h.names.get(ctx, h.c)
		if err != nil {
			h.redisFail(w, r, err, "listing the queues")
			return
		}
	}
	names := list.names
	switch {
	case sorting.key == "name":
		names = slices.Sorted(slices.Values(names))
		if sorting.desc {
			slices.Reverse(names)
		}
	case sorting.key != "":
		names = names[:min(len(names), maxSorted)]
	}
	note := ""
	if sorting.key != "" && sorting.key != "name" && len(list.names) > maxSorted {
		note = fmt.Sprintf("Sorted among the first %s queues by name, of the %s listed: sort by name to page through all of them, or list fewer (Options.Queues, dqctl serve -queues).",
			num(int64(maxSorted)), num(int64(len(list.names))))
	}
	off := min(offset(r, "o"), int64(len(names)))
	var rows []queueRow
	if sorting.key == "" || sorting.key == "name" {
		rows = h.overviewRows(ctx, list, names[off:min(off+queuesPerPage, int64(len(names)))])
	} else {
		rows = h.overviewRows(ctx, list, names)
	}
	failed := 0
	for _, row := range rows {
		if row.status >= 500 {
			failed++
		}
	}
	if failed > 0 && failed == len(rows) {
		// Not one queue could be read: Redis is the problem, say so.
		h.failStatus(w, r, rows[0].status, "reading the queues: %s", rows[0].Err)
		return
	}
	if sorting.key != "" && sorting.key != "name" {
		sortRows(rows, sorting)
		rows = rows[off:min(off+queuesPerPage, int64(len(rows)))]
	}
	h.render(w, http.StatusOK, "overview", struct {
		layout
		Rows     []queueRow
		Pager    pager
		Heads    map[string]sortHead
		SortNote string
	}{h.layout(w, r, "Queues", true), rows, h.pager(r, "o", off, int64(len(rows)), int64(len(names)), queuesPerPage), h.heads(sorting), note})
}

// pager links the pages of one list on a page whose other parameters
// stay.
type pager struct {
	From, To, Total int64
	Past            bool // the offset is past the end of the list
	First, Prev     string
	Next, Last      string // "" when there is no such page
	// Filtered: a list filtered by a dead reason or a kind, whose pages
	// examine a stretch of the state's set and show the Shown items of it
	// that match (maybe none), with a Next while the set goes on. Of says
	// what they match ("of this cause"), Among what was examined ("dead
	// items").
	Filtered  bool
	Shown     int64
	Of, Among string
}

// pageLink is the page's URL with the query parameter key set to off.
func (h *handler) pageLink(r *http.Request, key string, off int64) string {
	v := r.URL.Query()
	v.Del("find") // a search is not repeated page after page
	v.Set(key, strconv.FormatInt(off, 10))
	return h.opt.Prefix + r.URL.Path[len(h.opt.Prefix):] + "?" + v.Encode()
}

// pager is the pager of a page of n items at offset off of total, in
// pages of size, linked through the query parameter key. Offsets anywhere
// up to math.MaxInt64 give links within 0..total.
func (h *handler) pager(r *http.Request, key string, off, n, total int64, size int) pager {
	p := pager{From: off + 1, To: off + n, Total: total, Past: n == 0 && total > 0}
	link := func(o int64) string { return h.pageLink(r, key, o) }
	sz := int64(size)
	lastStart := int64(0)
	if total > 0 {
		lastStart = (total - 1) / sz * sz
	}
	switch {
	case off >= total && total > 0:
		p.First, p.Prev = link(0), link(lastStart) // back from past the end: the last page
	case off > 0:
		p.First, p.Prev = link(0), link(max(0, off-sz))
	}
	if off < total-sz {
		p.Next = link(off + sz)
	}
	if off < lastStart {
		p.Last = link(lastStart)
	}
	return p
}

// readingPayloads runs f holding one of the handler's MaxPayloadReads
// tokens, waiting for one while ctx lasts.
func (h *handler) readingPayloads(ctx context.Context, f func() error) error {
	select {
	case h.payloads <- struct{}{}:
	case <-ctx.Done():
		return errBusy
	}
	defer func() { <-h.payloads }()
	return f()
}

// itemRow is an item as the lists and the item page show it.
type itemRow struct {
	redisq.Item
	IDShown               string
	URL                   string // "" when the id is too long to open
	IDX                   string // the id hex-encoded, for a selection; "" when it cannot be selected
	Long                  bool   // the id is long enough to wrap
	Due, Enqueued, DiedAt when
	Lease                 when
	// Of a completed item: when it was acked and when it goes, and its
	// result formatted as the payload is (HasResult: it was read, or it
	// is empty; ResultBusy: the budget left it unread).
	CompletedAt, Expires  when
	HasResult, ResultBusy bool
	Result                payloadView
	LeaseExpired, HasLoad bool
	Payload               payloadView
	// KindShown is the item's kind as shown ("" for none), KindURL its
	// state's list filtered by it ("" when it cannot be).
	KindShown, KindURL string
	// Busy: the payload was not read, the handler's payload budget
	// (Options.PayloadBytesPerSecond) being spent.
	Busy bool
	// In a list of a partitioned queue: the item's partition (its index,
	// name, name as shown, its page's tab: "" when too long to open), and
	// PIDX, the "part.HEXID" of the selection ("" when it cannot be
	// selected).
	HasPart                      bool
	Part                         int
	PartName, PartShown, PartURL string
	PIDX                         string
	// Of an in-flight item: the worker whose heartbeat lists it.
	Holder    holder
	HasHolder bool
	// Occurrence: the item is an occurrence of recurring registration
	// RegShown (its name as shown), whose time is RegAt.
	Occurrence bool
	RegShown   string
	RegAt      when
	NotYetDue  bool // a scheduled item due after now
}

// longID is the length (in bytes) past which an id may wrap in a list:
// shorter ones stay on one line.
const longID = 40

// previewBytes is how much of a formatted payload a list shows.
const previewBytes = 300

// itemRow formats it, showing up to limit bytes of formatted payload.
func (h *handler) itemRow(queue string, it redisq.Item, now time.Time, limit int) itemRow {
	row := itemRow{Item: it, IDShown: shown(it.ID), URL: h.itemURL(queue, it.ID), Due: at(it.Due, now), Enqueued: at(it.Enqueued, now)}
	row.Long = len(row.IDShown) > longID
	if it.Kind != "" {
		row.KindShown, row.KindURL = shown(it.Kind), h.kindURL(queue, it.State, "", it.Kind)
	}
	if row.URL != "" && len(it.ID) <= maxSelectID {
		row.IDX = hex.EncodeToString([]byte(it.ID))
	}
	if it.State == redisq.StateInFlight {
		row.Lease = at(it.LeaseDeadline, now)
		row.LeaseExpired = !it.LeaseDeadline.After(now)
	}
	if it.State == redisq.StateDead {
		row.DiedAt = at(it.DiedAt, now)
	}
	row.NotYetDue = it.State == redisq.StateScheduled && it.Due.After(now)
	if name, t, ok := redisq.Occurrence(it.ID); ok {
		row.Occurrence, row.RegShown, row.RegAt = true, quoted(name), at(t, now)
	}
	if it.Payload != nil || it.PayloadSize == 0 {
		row.HasLoad = true
		row.Payload = formatPayload(it.Payload, it.PayloadSize, limit)
	}
	if it.State == redisq.StateCompleted {
		row.CompletedAt, row.Expires = at(it.CompletedAt, now), at(it.Expires, now)
		if it.Result != nil || it.ResultSize == 0 {
			row.HasResult = true
			row.Result = formatPayload(it.Result, it.ResultSize, limit)
		}
	}
	row.Item.Payload, row.Item.Result = nil, nil // shown through row.Payload and row.Result only
	return row
}

// itemBytes is how much of a formatted payload the item page shows.
const itemBytes = 256 << 10

func (h *handler) itemPage(ctx context.Context, w http.ResponseWriter, r *http.Request) {
	name, id := r.URL.Query().Get("q"), r.URL.Query().Get("id")
	if err := checkName("item id", id); err != nil {
		h.fail(w, r, http.StatusBadRequest, "%v", err)
		return
	}
	t := h.target(ctx, w, r, name)
	if t == nil {
		return
	}
	defer t.Close()
	if t.p != nil {
		h.itemOfPartitioned(ctx, w, r, t.p, id)
		return
	}
	q := t.q
	var row itemRow
	var job jobView
	err := h.readingPayloads(ctx, func() error {
		// Its size first (no copy), then the payload if it is small enough
		// and the budget has room: reading it costs Redis a copy.
		it, err := q.GetPrefix(ctx, id, 0)
		if err != nil {
			return err
		}
		busy, resultBusy := false, false
		if it.State == redisq.StateCompleted && it.ResultSize > 0 && it.ResultSize <= ItemPayloadBytes && it.PayloadSize <= ItemPayloadBytes {
			// Its result, which only Get reads (with the whole payload).
			if resultBusy, err = h.readResult(ctx, q, &it, ItemPayloadBytes); err != nil {
				return err
			}
			busy = resultBusy && it.PayloadSize > 0
		} else if it.PayloadSize > 0 && it.PayloadSize <= ItemPayloadBytes {
			if busy = !h.budget.take(it.PayloadSize); !busy {
				size := it.PayloadSize
				if it, err = q.GetPrefix(ctx, id, ItemPayloadBytes); err != nil {
					return err
				}
				h.budget.charge(copied(it.PayloadSize) - size) // replaced meanwhile
				if it.PayloadSize > ItemPayloadBytes {
					it.Payload = nil
				}
			}
		}
		// GetPrefix does not report Redis TIME; one more round trip reads
		// it, so that times are relative to the clock the queue runs by.
		now, err := h.c.Time(ctx).Result()
		if err != nil {
			now = time.Now()
		}
		row = h.itemRow(name, it, now, itemBytes)
		row.Busy, row.ResultBusy = busy, resultBusy
		job = jobOf(it, now)
		return nil
	})
	switch {
	case errors.Is(err, redisq.ErrNotFound):
		h.fail(w, r, http.StatusNotFound, "no item %s in queue %s (it may have been acked or deleted)", quoted(id), quoted(name))
		return
	case err != nil:
		h.redisFail(w, r, err, fmt.Sprintf("reading item %s of queue %s", quoted(id), quoted(name)))
		return
	}
	l := h.layout(w, r, "Item "+quoted(id), false)
	l.Crumbs = append(l.Crumbs, crumb{shown(name), h.queueURL(name)}, crumb{shown(id), ""})
	h.render(w, http.StatusOK, "item", struct {
		layout
		Queue, QueueShown string
		Item              itemRow
		Job               jobView
		ReadMax           int
		Budget            int
	}{l, name, shown(name), row, job, ItemPayloadBytes, h.budget.perSecond()})
}

// copied is how many bytes of a payload of size GetPrefix has Redis copy
// when asked for some of it: all, up to redisq.MaxPrefixScan; none past.
func copied(size int) int {
	if size > redisq.MaxPrefixScan {
		return 0
	}
	return size
}

// byteBudget is a token bucket of payload bytes, shared by every request
// of a handler, holding a second's worth (and at least ItemPayloadBytes).
// Safe for concurrent use; a nil budget has no bound.
type byteBudget struct {
	rate, capacity float64 // bytes a second, and at most

	mu     sync.Mutex
	tokens float64   // guarded by mu
	filled time.Time // guarded by mu: when tokens were last added
}

// newByteBudget returns a budget of perSecond bytes, or nil when
// perSecond is negative.
func newByteBudget(perSecond int) *byteBudget {
	if perSecond < 0 {
		return nil
	}
	b := &byteBudget{rate: float64(perSecond), capacity: float64(max(perSecond, ItemPayloadBytes)), filled: time.Now()}
	b.tokens = b.capacity
	return b
}

// take takes n bytes from the budget if it holds them, and reports
// whether it did.
func (b *byteBudget) take(n int) bool {
	if b == nil {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refillLocked()
	if b.tokens < float64(n) {
		return false
	}
	b.tokens -= float64(n)
	return true
}

// charge takes n more bytes (n > 0) however many are left: a read that
// cost more than was taken for it.
func (b *byteBudget) charge(n int) {
	if b == nil || n <= 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refillLocked()
	b.tokens -= float64(n)
}

func (b *byteBudget) refillLocked() {
	now := time.Now()
	if d := now.Sub(b.filled); d > 0 {
		b.tokens = min(b.capacity, b.tokens+d.Seconds()*b.rate)
	}
	b.filled = now
}

// perSecond is the budget's rate in bytes a second; 0 without a bound.
func (b *byteBudget) perSecond() int {
	if b == nil {
		return 0
	}
	return int(b.rate)
}
