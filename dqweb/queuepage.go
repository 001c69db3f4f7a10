package dqweb

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/dq-go/delayqueue/redisq"
)

// The queue page is a summary (counts, rates, the history of the last
// minutes, the due and lateness charts) and one tab per state, each a
// link (queue?q=NAME&state=dead&offset=20): a list of one page with its
// count, paging, a checkbox per item for the actions on a selection, and
// the actions on the whole state; and, when the queue has recurring
// registrations, their tab (state=recurring, see recurring.go). A search
// box finds an item by its exact id in any state (queue?q=NAME&find=ID)
// and opens its page.
//
// Parameters: q, the queue (or qx, hex-encoded, as the page's own search
// form sends it, so that any name survives); state, the tab (scheduled,
// inflight, dead, completed or recurring; none: the summary); offset, the list's;
// find, an id; reason, the dead list's cause (see deadreasons.go); kind,
// a list's kind (see kinds.go).

// deadPageSize is smaller than PageSize: dead items show their payloads.
const deadPageSize = 20

// completedPageSize is smaller than PageSize too: completed items show
// the start of their results.
const completedPageSize = deadPageSize

// tabLink is one tab of the queue page.
type tabLink struct {
	Label, State, URL string
	Count             int64
	Current, Alert    bool
	Title             string // a tooltip
	Err               string // why the count is unknown ("?")
}

// counterRow is one counter of the summary: its total and rate.
type counterRow struct {
	Name, Title string
	Total       int64
	Rate        float64
}

// selectForm is the form of the actions on the items selected in a list:
// the checkboxes of the rows belong to it (form="sel").
type selectForm struct {
	Prefix, CSRF, QueueX, State string
	Buttons                     []selectButton
	Max                         int
}

// selectButton is one action on a selection, with its question for one
// item and for {n} items (the page's script counts them).
type selectButton struct {
	Op, Label, One, Many string
	Danger               bool
}

// queueData is the queue page.
type queueData struct {
	layout
	queueRow
	QueueX string // the name hex-encoded, for forms
	Now    time.Time
	Tab    string // "", or the state shown
	Tabs   []tabLink
	Notice string     // a search that found nothing
	Find   string     // the id searched for, to prefill the box (see fillable)
	Pause  actionForm // Pause or Resume; no Op in read-only mode

	// The summary.
	Counters        []counterRow
	Due             chart
	Later           int64
	Lateness        chart
	HistoryTitle    string
	RatesChart      lineChart // the history of the rates
	SizesChart      lineChart // the history of the sizes
	HistoryReadings int

	// A state's tab.
	State     redisq.State
	Items     []itemRow
	Pager     pager
	Select    selectForm
	Selection bool // some rows can be selected
	Whole     []actionForm

	// Of a partition: the partitioned queue it belongs to.
	Parent, ParentShown, ParentURL string
	PartIndex, ParentParts         int
	// A search that found the id in several partitions: their links.
	Found []crumb
	// Resume, besides Pause, when only some partitions are paused.
	Resume actionForm

	// The Recurring tab.
	Regs     []regRow
	Behind   int // registrations no process keeps
	Orphaned int // registrations no live code registers

	// The workers (read on every view, see workers.go): the warning when
	// items are due and none is live, and the Workers tab's page of them.
	NoWorker   string
	WorkersURL string
	WorkerRows []workerRow
	// OverdueSince is when the oldest due item became due.
	OverdueSince when
	// holders names the worker of each lease the heartbeats list, for
	// the in-flight tab.
	holders map[holderKey]holder

	// The dead tab: its grouping by cause (unfiltered), or the cause it
	// is filtered by (Reason, exact; Filter).
	Reasons *reasonsView
	Reason  string
	Filter  *reasonFilter
	// ReasonsURL is the first page, which has the grouping, on the others
	// (and on a list filtered by kind).
	ReasonsURL string

	// A state's tab filtered by kind (exact; KindFilter).
	Kind       string
	KindFilter *kindFilter

	// The summary's panel of rate and concurrency limits (see limits.go).
	Limits limitsView
}

// queueName is the page's queue: qx (hex) when given, else q.
func queueName(r *http.Request) (string, error) {
	if x := r.URL.Query().Get("qx"); x != "" {
		b, err := hex.DecodeString(x)
		if err != nil {
			return "", fmt.Errorf("bad parameter qx: %v", err)
		}
		return string(b), nil
	}
	return r.URL.Query().Get("q"), nil
}

func (h *handler) queuePage(ctx context.Context, w http.ResponseWriter, r *http.Request) {
	name, err := queueName(r)
	if err != nil {
		h.fail(w, r, http.StatusBadRequest, "%v", err)
		return
	}
	var state redisq.State
	tab := "" // a tab that is no state's: recurring or workers
	switch s := r.URL.Query().Get("state"); {
	case s == recurringTab, s == workersTab:
		tab = s
	case s != "":
		if state, err = redisq.ParseState(s); err != nil {
			h.fail(w, r, http.StatusBadRequest, "unknown state %s: the tabs are scheduled, inflight, dead, completed, recurring and workers", quoted(s))
			return
		}
	}
	recurring := tab == recurringTab
	reason, err := reasonParam(r, state)
	if err != nil {
		h.fail(w, r, http.StatusBadRequest, "%v", err)
		return
	}
	kind, err := kindParam(r, state)
	if err != nil {
		h.fail(w, r, http.StatusBadRequest, "%v", err)
		return
	}
	find := r.URL.Query().Get("find")
	if find != "" {
		if err := checkName("item id", find); err != nil {
			h.fail(w, r, http.StatusBadRequest, "%v", err)
			return
		}
	}
	t := h.target(ctx, w, r, name)
	if t == nil {
		return
	}
	defer t.Close()
	if t.p != nil && recurring {
		h.fail(w, r, http.StatusBadRequest, "queue %s is partitioned: its recurring registrations are on its partitions' pages", quoted(name))
		return
	}
	q := t.q
	what := "reading queue " + quoted(name)
	status := http.StatusOK
	d := queueData{layout: h.layout(w, r, shown(name), true), QueueX: hex.EncodeToString([]byte(name)),
		State: state, Find: fillable(find), Reason: reason, Kind: kind}
	if t.p != nil {
		d.queueRow = h.prow(ctx, t.p, false)
	} else {
		d.queueRow = h.row(ctx, name, false)
	}
	d.Crumbs = append(d.Crumbs, crumb{shown(name), ""})
	if d.status != 0 {
		h.failStatus(w, r, d.status, "%s: %s", what, d.Err)
		return
	}
	if t.q != nil {
		h.parentOf(ctx, &d)
	}
	if find != "" {
		var found string
		var at []int
		if t.p != nil {
			found, at, err = h.findPartitioned(ctx, t.p, find)
		} else {
			found, err = h.find(ctx, q, find)
		}
		switch {
		case err != nil:
			h.redisFail(w, r, err, fmt.Sprintf("finding item %s in queue %s", quoted(find), quoted(name)))
			return
		case found != "" && t.p == nil:
			http.Redirect(w, r, h.itemURL(name, found), http.StatusSeeOther)
			return
		case len(at) == 1:
			h.redirectToPartition(w, r, t.p, at[0], found)
			return
		case len(at) > 1:
			d.Notice = fmt.Sprintf("Item %s is in %s of queue %s (enqueued under ordering keys of different partitions):", quoted(found), count(int64(len(at)), "partition"), quoted(name))
			d.Found = h.foundLinks(t.p, found, at)
		default:
			status = http.StatusNotFound
			d.Notice = fmt.Sprintf("No item %s in queue %s, in any state (it may have been acked or deleted; ids are matched exactly).", quoted(find), quoted(name))
		}
		d.Refresh = 0 // keep the answer on the screen
	}
	d.Now = d.Stats.Now
	d.WorkersURL = h.workersURL(name)
	if d.Stats.DueBacklog > 0 {
		d.OverdueSince = at(d.Now.Add(-d.Stats.OldestOverdue), d.Now)
	}
	switch {
	case tab != "":
		d.Tab = tab
	case state != 0:
		d.Tab = state.String()
	}
	if d.Tab != "" {
		d.Refresh = 0 // a list is for reading and selecting: no reload under the user
	}
	st := d.Stats
	d.Tabs = []tabLink{
		{Label: "Summary", URL: h.tabURL(name, 0), Current: d.Tab == ""},
		{Label: "Scheduled", State: "scheduled", URL: h.tabURL(name, redisq.StateScheduled), Count: st.Scheduled, Current: state == redisq.StateScheduled},
		{Label: "In flight", State: "inflight", URL: h.tabURL(name, redisq.StateInFlight), Count: st.InFlight, Current: state == redisq.StateInFlight},
		{Label: "Dead", State: "dead", URL: h.tabURL(name, redisq.StateDead), Count: st.Dead, Current: state == redisq.StateDead, Alert: st.Dead > 0},
		{Label: "Completed", State: "completed", URL: h.tabURL(name, redisq.StateCompleted), Count: st.Completed, Current: state == redisq.StateCompleted,
			Title: "acked items kept for their job's retention, with their results"},
	}
	var regs []redisq.Registration
	if q != nil {
		// Read after Stats: a next occurrence before d.Now is behind for sure.
		var regErr error
		regs, regErr = q.Registrations(ctx)
		if recurring && regErr != nil {
			h.redisFail(w, r, regErr, "reading the recurring registrations of queue "+quoted(name))
			return
		}
		if t, ok := h.recurringTabLink(name, regs, regErr, d.Now, recurring); ok {
			d.Tabs = append(d.Tabs, t)
		}
	}
	ws, wErr := readWorkers(ctx, t)
	if tab == workersTab && wErr != nil {
		h.redisFail(w, r, wErr, "reading the workers of queue "+quoted(name))
		return
	}
	if wErr == nil {
		d.NoWorker, _ = noWorker(d.Stats, d.PartRows, ws)
		d.holders = h.holders(name, ws)
		countWorkers(d.PartRows, ws)
	}
	d.Tabs = append(d.Tabs, h.workerTabLink(name, len(ws), wErr, d.NoWorker, tab == workersTab))
	if !h.opt.ReadOnly {
		op := "pause"
		if st.Paused {
			op = "resume"
		}
		d.Pause = h.wholeForm(d.layout, op, name, 0, 0)
		d.Pause.Confirm = (action{Op: op, Queue: name, NParts: d.Parts}).question()
		if d.PausedParts > 0 && !st.Paused {
			d.Resume = h.wholeForm(d.layout, "resume", name, 0, 0)
			d.Resume.Confirm = (action{Op: "resume", Queue: name, NParts: d.Parts}).question()
		}
	}
	switch {
	case recurring:
		err = h.recurringList(ctx, r, q, regs, &d)
	case tab == workersTab:
		h.workersList(r, t, ws, &d)
	case state == 0:
		err = h.summary(ctx, t.Admin, &d)
		if q != nil { // a partitioned queue has no limits
			h.limitsPanel(ctx, r, q, &d)
		}
	case t.p != nil:
		err = h.plist(ctx, r, t.p, &d)
	default:
		err = h.list(ctx, r, q, &d)
	}
	if err == nil && state == redisq.StateDead {
		// The grouping on the first page (or the cause's count, filtered):
		// it costs a script per 1000 dead items grouped.
		v := r.URL.Query()
		firstPage := (v.Get("offset") == "" || v.Get("offset") == "0") && v.Get("cursor") == ""
		// A list of one kind is not grouped: the grouping counts every kind.
		if firstPage && kind == "" || reason != "" {
			err = h.deadGrouping(ctx, t, &d)
		} else {
			d.ReasonsURL = h.tabURL(name, redisq.StateDead)
		}
	}
	if err == nil && kind != "" {
		h.filterByKind(&d)
	}
	var bad badRequest
	if errors.As(err, &bad) {
		h.fail(w, r, http.StatusBadRequest, "%v", bad.error)
		return
	}
	if err != nil {
		h.redisFail(w, r, err, what)
		return
	}
	h.render(w, status, "queue", d)
}

// holder is the worker whose heartbeat lists in-flight item it of queue
// name (a partition's, for a partitioned queue), if any.
func (d *queueData) holder(name string, it redisq.Item) (holder, bool) {
	if it.State != redisq.StateInFlight {
		return holder{}, false
	}
	hd, ok := d.holders[holderKey{name, it.ID}]
	return hd, ok
}

// fillable is s to prefill the search box with, or "" when s holds what a
// page shows only escaped (invalid UTF-8, control and bidi characters): an
// input's value cannot show an escape, and the notice names the id
// escaped.
func fillable(s string) string {
	if !utf8.ValidString(s) {
		return ""
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return ""
		}
	}
	return s
}

// find looks id up in q, exactly, then without the spaces around it (a
// pasted id often brings some); it returns the id found, or "".
func (h *handler) find(ctx context.Context, q *redisq.Queue, id string) (string, error) {
	for _, c := range []string{id, strings.TrimSpace(id)} {
		if c == "" {
			continue
		}
		_, err := q.GetPrefix(ctx, c, 0) // no payload read
		switch {
		case err == nil:
			return c, nil
		case !errors.Is(err, redisq.ErrNotFound):
			return "", err
		}
	}
	return "", nil
}

// summary fills in the summary tab: counters and rates, the history, the
// due chart and the lateness chart.
func (h *handler) summary(ctx context.Context, q redisq.Admin, d *queueData) error {
	hist, err := q.DueHistogram(ctx, time.Minute, 60)
	if err != nil {
		return err
	}
	d.Due, d.Later = dueChart(hist), hist.Later
	rv := d.Rates
	d.Lateness = latenessChart(rv.Lateness)
	d.HistoryReadings = len(rv.History)
	d.HistoryTitle = fmt.Sprintf("The last %d minutes", int(chartSpan(rv.History, d.Now)/time.Minute))
	d.RatesChart, d.SizesChart = historyCharts(rv.History, d.Now)
	c := d.Stats.StatsCounters
	d.Counters = []counterRow{
		{"enqueued", "new items", c.Enqueued, rv.Enqueued},
		{"delivered", "leases granted (redeliveries included)", c.Delivered, rv.Delivered},
		{"acked", "items acked", c.Acked, rv.Acked},
		{"nacked", "leases given back by Nack", c.Nacked, rv.Nacked},
		{"expired", "leases that timed out and were retried", c.Expired, rv.Expired},
		{"dead-lettered", "items moved to the dead set", c.DeadLettered, rv.DeadLettered},
		{"cancelled", "items cancelled", c.Cancelled, rv.Cancelled},
		{"rescheduled", "items rescheduled, or replaced by Schedule", c.Rescheduled, rv.Rescheduled},
		{"requeued", "dead items requeued", c.Requeued, rv.Requeued},
		{"deleted", "items deleted by DeleteDead, DeleteAllDead or Purge", c.Deleted, rv.Deleted},
		{"skipped", "recurring occurrences skipped by their Overlap or CatchUpWindow", c.Skipped, rv.Skipped},
		{"snoozed", "leases given back by Snooze: no attempt counted, not a failure", c.Snoozed, rv.Snoozed},
	}
	return nil
}

// list fills in a state's tab: one page of its items, the selection's
// form and the actions on the whole state.
func (h *handler) list(ctx context.Context, r *http.Request, q *redisq.Queue, d *queueData) error {
	size := pageSize(d.State)
	total := map[redisq.State]int64{redisq.StateScheduled: d.Stats.Scheduled, redisq.StateInFlight: d.Stats.InFlight, redisq.StateDead: d.Stats.Dead,
		redisq.StateCompleted: d.Stats.Completed}[d.State]
	off := offset(r, "offset")
	// An offset past the end (up to math.MaxInt64) reads the end, empty.
	page, err := q.List(ctx, d.State, redisq.ListOptions{Offset: min(off, total), Limit: size, Reason: d.Reason, Kind: d.Kind})
	var busy []bool
	switch {
	case err != nil:
	case d.State == redisq.StateDead:
		busy, err = h.withPayloads(ctx, q, &page)
	case d.State == redisq.StateCompleted:
		busy, err = h.withResults(ctx, func(int) *redisq.Queue { return q }, page.Items)
	}
	if err != nil {
		return err
	}
	if off > total {
		page.Items = nil
	}
	for i, it := range page.Items {
		row := h.itemRow(d.Name, it, page.Now, previewBytes)
		row.Busy = busy != nil && busy[i]
		if d.State == redisq.StateCompleted {
			row.Busy, row.ResultBusy = false, row.Busy
		}
		row.Holder, row.HasHolder = d.holder(d.Name, it)
		row.KindURL = h.kindURL(d.Name, d.State, d.Reason, it.Kind)
		d.Items = append(d.Items, row)
		d.Selection = d.Selection || row.IDX != ""
	}
	if d.Reason != "" || d.Kind != "" {
		// A filtered page: its size says nothing of the rest (see pager).
		d.Pager = filteredPager(d)
		d.Pager.From, d.Pager.Total = off+1, page.Total
		if off > 0 {
			d.Pager.First = h.pageLink(r, "offset", 0)
		}
		if page.Next >= 0 && off <= total {
			d.Pager.Next = h.pageLink(r, "offset", page.Next)
		}
	} else {
		d.Pager = h.pager(r, "offset", off, int64(len(d.Items)), page.Total, size)
	}
	if h.opt.ReadOnly {
		return nil
	}
	h.actionsOfList(d, page.Total)
	return nil
}

// actionsOfList fills in the selection's form and the actions on the
// whole state of a list whose state holds total items.
func (h *handler) actionsOfList(d *queueData, total int64) {
	d.Select = selectForm{Prefix: h.opt.Prefix, CSRF: d.CSRF, QueueX: d.QueueX, State: d.Tab, Max: MaxSelect}
	var selOps, wholeOps []string
	switch d.State {
	case redisq.StateScheduled:
		selOps, wholeOps = []string{"run-now", "delete"}, []string{"purge"}
	case redisq.StateInFlight:
		selOps, wholeOps = []string{"delete"}, []string{"purge"}
	case redisq.StateCompleted:
		selOps, wholeOps = []string{"run-now", "delete"}, []string{"purge"}
	default:
		selOps, wholeOps = []string{"requeue", "delete-dead"}, []string{"requeue-all", "delete-all-dead"}
	}
	for _, op := range selOps {
		a := action{Op: op, Queue: d.Name, State: d.State, NParts: d.Parts}
		d.Select.Buttons = append(d.Select.Buttons, selectButton{Op: op, Label: ops[op].label + " selected",
			One: a.manyQuestion(1), Many: a.manyQuestionN("{n}"), Danger: ops[op].danger})
	}
	if total > 0 {
		for _, op := range wholeOps {
			f := h.wholeForm(d.layout, op, d.Name, d.State, total)
			f.Confirm = (action{Op: op, Queue: d.Name, State: d.State, Count: total, NParts: d.Parts}).question()
			d.Whole = append(d.Whole, f)
		}
	}
}

// wholeForm is the button of an action on a whole state (with its count
// as last read) or on the queue.
func (h *handler) wholeForm(l layout, op, queue string, state redisq.State, n int64) actionForm {
	a := action{Op: op, Queue: queue, State: state, Count: n}
	f := actionForm{Prefix: h.opt.Prefix, CSRF: l.CSRF, Op: op, QueueX: hex.EncodeToString([]byte(queue)),
		Label: ops[op].label, Confirm: a.question(), Danger: ops[op].danger}
	if op == "purge" {
		f.State = state.String()
		f.Label += " " + strings.ReplaceAll(stateNoun(state), " item", "")
	}
	return f
}

// pageSize is the size of a page of the list of state.
func pageSize(state redisq.State) int {
	switch state {
	case redisq.StateDead:
		return deadPageSize
	case redisq.StateCompleted:
		return completedPageSize
	}
	return PageSize
}

// A page of completed items shows the start of each result (previewRead
// bytes of it, formatted as a payload's preview). Redis has no ranged
// read of a hash field, and redisq reads a result only with Get, which
// copies the payload too, whole: so a result is read only when it and the
// payload are each at most previewScan bytes, within the handler's budget
// of payload bytes, holding one payload token for the page; a larger one
// is shown by its size (its item page reads up to ItemPayloadBytes of
// each). The sizes are those List read just before: an item replaced
// between the two reads is charged to the budget after, and shown
// without its result.
func (h *handler) withResults(ctx context.Context, queueOf func(i int) *redisq.Queue, items []redisq.Item) (busy []bool, err error) {
	busy = make([]bool, len(items))
	err = h.readingPayloads(ctx, func() error {
		for i := range items {
			it := &items[i]
			var err error
			if busy[i], err = h.readResult(ctx, queueOf(i), it, previewScan); err != nil {
				return err
			}
			it.Payload = nil // the list does not show it
			if len(it.Result) > previewRead {
				it.Result = append([]byte(nil), it.Result[:previewRead]...)
			}
		}
		return nil
	})
	return busy, err
}

// readResult reads the result of completed item it (and its payload,
// which Get copies with it) when each is at most limit bytes and the
// budget has room for both: busy when the budget left it unread. An item
// gone, replaced or no longer completed meanwhile is left unread.
func (h *handler) readResult(ctx context.Context, q *redisq.Queue, it *redisq.Item, limit int) (busy bool, err error) {
	if it.State != redisq.StateCompleted || it.ResultSize == 0 || it.ResultSize > limit || it.PayloadSize > limit || len(it.ID) > MaxName {
		return false, nil
	}
	cost := it.ResultSize + it.PayloadSize
	if !h.budget.take(cost) {
		return true, nil
	}
	full, err := q.Get(ctx, it.ID)
	if errors.Is(err, redisq.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	h.budget.charge(full.ResultSize + full.PayloadSize - cost) // replaced meanwhile
	if full.State != redisq.StateCompleted || full.ResultSize != it.ResultSize || full.PayloadSize != it.PayloadSize {
		return false, nil
	}
	it.Result, it.Payload = full.Result, full.Payload
	return false, nil
}

// A page of dead items shows the start of each payload up to previewScan
// bytes: previewRead bytes of it are read, and larger payloads are not
// read at all (their item page shows more).
const (
	previewScan = 64 << 10
	previewRead = 1 << 10
)

// withPayloads fills in the start of the payloads of a page of dead items
// read without them, holding one payload token for the page; busy marks
// the items whose payload the budget left unread.
func (h *handler) withPayloads(ctx context.Context, q *redisq.Queue, page *redisq.Page) (busy []bool, err error) {
	busy = make([]bool, len(page.Items))
	err = h.readingPayloads(ctx, func() error {
		for i := range page.Items {
			var err error
			if busy[i], err = h.previewPayload(ctx, q, &page.Items[i]); err != nil {
				return err
			}
		}
		return nil
	})
	return busy, err
}
