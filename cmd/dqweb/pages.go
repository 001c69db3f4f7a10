package dqweb

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/dq-go/delayqueue/redisq"
)

// Every page does bounded work whatever the queue's size: Stats and Get
// are O(log n), the due chart 62 range counts, each list one page (List is
// O(log n + page)). Only the overview's list of queues, without
// Options.Queues, SCANs the keyspace, and reuses what it found for
// Options.QueueListTTL.

func (h *handler) queueURL(name string) string {
	return h.opt.Prefix + "queue?" + url.Values{"q": {name}}.Encode()
}

func (h *handler) itemURL(name, id string) string {
	return h.opt.Prefix + "item?" + url.Values{"q": {name}, "id": {id}}.Encode()
}

// queue opens the queue name and checks that it exists, returning the
// HTTP status that fits an error.
func (h *handler) queue(ctx context.Context, name string) (*redisq.Queue, int, error) {
	q, err := redisq.New(ctx, h.c, name, redisq.WithEvictionCheck(redisq.EvictionIgnore))
	if err != nil {
		return nil, http.StatusBadRequest, fmt.Errorf("bad queue name %q: names are non-empty and hold no '{' or '}'", name)
	}
	ok, err := q.Exists(ctx)
	if err != nil {
		return nil, http.StatusBadGateway, fmt.Errorf("reading queue %q from Redis: %v", name, err)
	}
	if !ok {
		return nil, http.StatusNotFound, fmt.Errorf("no queue named %q on this server", name)
	}
	return q, 0, nil
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
	Name, URL string
	Err       string
	Stats     redisq.Stats
	Rates     rateView
}

func (h *handler) row(ctx context.Context, name string) queueRow {
	row := queueRow{Name: name, URL: h.queueURL(name)}
	q, err := redisq.New(ctx, h.c, name, redisq.WithEvictionCheck(redisq.EvictionIgnore))
	if err == nil {
		row.Stats, err = q.Stats(ctx)
	}
	if err != nil {
		row.Err = err.Error()
		return row
	}
	row.Rates = h.rates.observe(name, row.Stats)
	return row
}

func (h *handler) overview(ctx context.Context, w http.ResponseWriter, r *http.Request) {
	names := h.opt.Queues
	if len(names) == 0 {
		var err error
		names, err = h.names.get(ctx, h.c)
		if err != nil {
			h.fail(w, r, http.StatusBadGateway, "listing the queues: %v", err)
			return
		}
	}
	off := min(offset(r, "o"), int64(len(names)))
	shown := names[off:min(off+queuesPerPage, int64(len(names)))]
	rows := make([]queueRow, 0, len(shown))
	for _, n := range shown {
		rows = append(rows, h.row(ctx, n))
	}
	h.render(w, http.StatusOK, "overview", struct {
		layout
		Rows  []queueRow
		Pager pager
	}{h.layout(w, r, "Queues", true), rows, h.pager(r, "o", off, int64(len(shown)), int64(len(names)), queuesPerPage)})
}

// pager links the pages of one list on a page whose other parameters stay.
type pager struct {
	From, To, Total         int64
	First, Prev, Next, Last string // "" when there is no such page
}

func (h *handler) pager(r *http.Request, key string, off, n, total int64, size int) pager {
	p := pager{From: off + 1, To: off + n, Total: total}
	if n == 0 {
		p.From = off
	}
	link := func(o int64) string {
		v := r.URL.Query()
		v.Set(key, strconv.FormatInt(o, 10))
		return h.opt.Prefix + r.URL.Path[len(h.opt.Prefix):] + "?" + v.Encode()
	}
	sz := int64(size)
	if off > 0 {
		p.First, p.Prev = link(0), link(max(0, off-sz))
	}
	if off+sz < total {
		p.Next, p.Last = link(off+sz), link((total-1)/sz*sz)
	}
	return p
}

// deadPageSize is smaller than PageSize: dead items show their payloads.
const deadPageSize = 20

// queueData is the queue page.
type queueData struct {
	layout
	queueRow
	Now                            time.Time
	Due                            chart
	Later                          int64
	Lateness                       chart
	Scheduled, InFlight, Dead      []itemRow
	SchedPager, FlightPager, DPage pager
}

func (h *handler) queuePage(ctx context.Context, w http.ResponseWriter, r *http.Request) {
	name := r.URL.Query().Get("q")
	q, status, err := h.queue(ctx, name)
	if err != nil {
		h.fail(w, r, status, "%v", err)
		return
	}
	d := queueData{layout: h.layout(w, r, name, true), queueRow: h.row(ctx, name)}
	d.Crumbs = append(d.Crumbs, crumb{name, ""})
	if d.Err != "" {
		h.fail(w, r, http.StatusBadGateway, "reading queue %q: %s", name, d.Err)
		return
	}
	d.Now = d.Stats.Now
	hist, err := q.DueHistogram(ctx, time.Minute, 60)
	if err != nil {
		h.fail(w, r, http.StatusBadGateway, "reading queue %q: %v", name, err)
		return
	}
	d.Due, d.Later = dueChart(hist), hist.Later
	d.Lateness = latenessChart(d.Rates.Lateness)
	lists := []struct {
		state redisq.State
		key   string
		size  int
		rows  *[]itemRow
		pager *pager
	}{
		{redisq.StateInFlight, "f", PageSize, &d.InFlight, &d.FlightPager},
		{redisq.StateScheduled, "s", PageSize, &d.Scheduled, &d.SchedPager},
		{redisq.StateDead, "d", deadPageSize, &d.Dead, &d.DPage},
	}
	for _, l := range lists {
		off := offset(r, l.key)
		page, err := q.List(ctx, l.state, redisq.ListOptions{Offset: off, Limit: l.size})
		if err == nil && l.state == redisq.StateDead {
			err = withPayloads(ctx, q, &page, off)
		}
		if err != nil {
			h.fail(w, r, http.StatusBadGateway, "listing %s items of queue %q: %v", l.state, name, err)
			return
		}
		for _, it := range page.Items {
			*l.rows = append(*l.rows, h.itemRow(name, it, page.Now))
		}
		*l.pager = h.pager(r, l.key, off, int64(len(page.Items)), page.Total, l.size)
	}
	h.render(w, http.StatusOK, "queue", d)
}

// Payload previews are read for a page of dead items only while they are
// small: a page's payloads up to pagePayloadBudget bytes in all, else each
// payload up to itemPayloadBudget bytes on its own.
const (
	pagePayloadBudget = 2 << 20
	itemPayloadBudget = 64 << 10
)

// withPayloads fills in the payloads of a page of dead items read without
// them, within the budgets.
func withPayloads(ctx context.Context, q *redisq.Queue, page *redisq.Page, off int64) error {
	var sum int
	for _, it := range page.Items {
		sum += it.PayloadSize
	}
	if sum == 0 {
		return nil
	}
	if sum <= pagePayloadBudget {
		again, err := q.List(ctx, redisq.StateDead, redisq.ListOptions{Offset: off, Limit: len(page.Items), Payloads: true})
		if err != nil {
			return err
		}
		*page = again
		return nil
	}
	for i, it := range page.Items {
		if it.PayloadSize > itemPayloadBudget {
			continue
		}
		full, err := q.Get(ctx, it.ID)
		if errors.Is(err, redisq.ErrNotFound) {
			continue // gone meanwhile: shown without its payload
		}
		if err != nil {
			return err
		}
		page.Items[i].Payload = full.Payload
	}
	return nil
}

// itemRow is an item as the lists and the item page show it.
type itemRow struct {
	redisq.Item
	URL                   string
	Due, Enqueued, DiedAt when
	Lease                 when
	LeaseExpired, HasLoad bool
	Payload               payloadView
}

// previewBytes is how much of a formatted payload a list shows.
const previewBytes = 300

func (h *handler) itemRow(queue string, it redisq.Item, now time.Time) itemRow {
	row := itemRow{Item: it, URL: h.itemURL(queue, it.ID), Due: at(it.Due, now), Enqueued: at(it.Enqueued, now)}
	if it.State == redisq.StateInFlight {
		row.Lease = at(it.LeaseDeadline, now)
		row.LeaseExpired = !it.LeaseDeadline.After(now)
	}
	if it.State == redisq.StateDead {
		row.DiedAt = at(it.DiedAt, now)
	}
	if it.Payload != nil || it.PayloadSize == 0 {
		row.HasLoad = true
		row.Payload = formatPayload(it.Payload, previewBytes)
	}
	return row
}

// itemBytes is how much of a formatted payload the item page shows
// without ?full=1.
const itemBytes = 256 << 10

func (h *handler) itemPage(ctx context.Context, w http.ResponseWriter, r *http.Request) {
	name, id := r.URL.Query().Get("q"), r.URL.Query().Get("id")
	q, status, err := h.queue(ctx, name)
	if err != nil {
		h.fail(w, r, status, "%v", err)
		return
	}
	if id == "" {
		h.fail(w, r, http.StatusBadRequest, "no item id given")
		return
	}
	it, err := q.Get(ctx, id)
	switch {
	case errors.Is(err, redisq.ErrNotFound):
		h.fail(w, r, http.StatusNotFound, "no item %q in queue %q (it may have been acked or deleted)", id, name)
		return
	case err != nil:
		h.fail(w, r, http.StatusBadGateway, "reading item %q of queue %q: %v", id, name, err)
		return
	}
	limit := itemBytes
	if r.URL.Query().Get("full") == "1" {
		limit = -1
	}
	// Get does not report Redis TIME; one more round trip reads it, so
	// that times are relative to the clock the queue runs by.
	now, err := h.c.Time(ctx).Result()
	if err != nil {
		now = time.Now()
	}
	row := h.itemRow(name, it, now)
	row.Payload = formatPayload(it.Payload, limit)
	l := h.layout(w, r, "Item "+strconv.Quote(id), false)
	l.Crumbs = append(l.Crumbs, crumb{name, h.queueURL(name)}, crumb{id, ""})
	h.render(w, http.StatusOK, "item", struct {
		layout
		Queue   string
		Item    itemRow
		FullURL string
	}{l, name, row, row.URL + "&full=1"})
}
