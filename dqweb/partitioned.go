package dqweb

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/dq-go/delayqueue/redisq"
	"github.com/redis/go-redis/v9"
)

// A partitioned queue (redisq.NewPartitioned) is one queue NAME over P
// ordinary queues, its partitions (NAME~i.j). The dashboard shows it as
// one queue, as dqctl does:
//
//   - the overview lists it as one row: its name, a "P partitions" badge,
//     the sums of its partitions' figures (redisq.SumStats), "paused" when
//     every partition is and "k/P paused" when some are; its partitions
//     are not listed again (without Options.Queues: redisq.ListQueues less
//     the partitions redisq.ListPartitioned names, plus those queues; with
//     Options.Queues, each name on the page is looked up, one HGETALL, and
//     may be a partitioned queue);
//   - its page (queue?q=NAME) has the summed figures, counters, rates and
//     history, and the due chart (Partitioned.DueHistogram), a table of
//     its partitions, each linked to its own page, and tabs listing the
//     items of a state merged across partitions (Partitioned.List) with a
//     partition column, paged forward by a cursor of one offset per
//     partition (cursor=a,b,c, as dqctl list -cursor), not by an offset;
//     no Recurring tab (registrations live on the partitions' pages);
//   - the search finds an id in its routing partition first (one
//     GetPrefix), else in whichever partitions hold it (Partitioned.Locate:
//     one GetPrefix per partition), and opens the item's page on its
//     partition; an item page asked of NAME does the same for its exact id;
//     a partition whose name is too long to open (over MaxName) is named
//     in a 400 instead;
//   - actions on items say which partition each item is in (the form field
//     pidx, "i.HEXID", from the list; a form carries pidx or idx, not
//     both) or are routed to the partition that holds it: for one id, as
//     the search finds it (an id found in several partitions, none its
//     routing one, is left alone); for several, in its routing partition
//     only (one GetPrefix each; an id not there is left alone and named),
//     so that a selection costs at most two round trips per item; the
//     question on one item in a named partition names that partition;
//   - actions on a state or on the queue (purge, requeue all, delete all,
//     pause, resume) act on every partition, and their questions name the
//     queue with its partition count.
//
// A partition's own name is an ordinary queue for every page; its page
// says which partitioned queue it belongs to (one HGETALL of the table of
// the name before its last '~') and links to it.
//
// Costs grow with P (at most redisq.MaxPartitions): a partitioned queue's
// row or page opens its P partitions (redisq.New each, as an ordinary
// queue's page does once) and reads each partition's Stats, concurrently;
// a list page reads a page from every partition.

// target is the queue a page or an action names: an ordinary queue (q)
// or a partitioned one (p); Close closes it.
type target struct {
	redisq.Admin // a whole queue's calls act on every partition of one
	q            *redisq.Queue
	p            *redisq.Partitioned
}

// openPartitioned opens the partitioned queue name, as dqctl does: no
// registry entry, no eviction check.
func (h *handler) openPartitioned(ctx context.Context, name string) (*redisq.Partitioned, error) {
	return redisq.OpenPartitioned(ctx, h.c, name, redisq.WithEvictionCheck(redisq.EvictionIgnore), redisq.WithoutRegistry())
}

// target opens the queue name: the partitioned queue when it has a
// partition table (one HGETALL tells), else the ordinary queue, which
// must exist. On failure it renders the error page and returns nil.
// Close it after.
func (h *handler) target(ctx context.Context, w http.ResponseWriter, r *http.Request, name string) *target {
	if err := checkName("queue name", name); err != nil {
		h.fail(w, r, http.StatusBadRequest, "%v", err)
		return nil
	}
	p, err := h.openPartitioned(ctx, name)
	switch {
	case err == nil:
		return &target{Admin: p, p: p}
	case !errors.Is(err, redisq.ErrNoQueue):
		status, msg := h.tableStatus(name, err)
		h.failStatus(w, r, status, "reading queue %s: %s", quoted(name), msg)
		return nil
	}
	q := h.queue(ctx, w, r, name)
	if q == nil {
		return nil
	}
	return &target{Admin: q, q: q}
}

// tableStatus is redisStatus, but for a partition table of the queue
// name that Redis returned and redisq refused (bad count, version or
// names): 502.
func (h *handler) tableStatus(name string, err error) (int, string) {
	if badTable(err) {
		return http.StatusBadGateway, fmt.Sprintf("Redis holds a bad partition table: %v", err)
	}
	return h.redisStatus(err)
}

// badTable reports whether err is redisq's refusal of a partition table
// (never a match on the error's text, which holds the queue's name).
func badTable(err error) bool {
	return errors.Is(err, redisq.ErrBadPartitionTable)
}

// listing is the overview's list of queues.
type listing struct {
	// names are the queues shown, sorted: ordinary queues that are no
	// partition of a listed partitioned queue, and partitioned queues.
	names []string
	parts map[string][]string // partitioned queue -> its partitions
	bad   map[string]string   // partitioned queue -> why its table is unreadable
	// probe: names are Options.Queues, each to be looked up.
	probe bool
}

// readListing lists the registered queues (redisq.ListQueues) and the
// partitioned ones (redisq.ListPartitioned), each partitioned queue in
// place of its partitions.
func readListing(ctx context.Context, c redis.UniversalClient) (*listing, error) {
	names, err := redisq.ListQueues(ctx, c)
	if err != nil {
		return nil, err
	}
	ps, err := redisq.ListPartitioned(ctx, c)
	if err != nil {
		return nil, err
	}
	l := &listing{names: []string{}, parts: map[string][]string{}, bad: map[string]string{}}
	partition := map[string]bool{}
	for _, pi := range ps {
		if pi.Err != nil {
			l.bad[pi.Name] = pi.Err.Error()
		} else {
			l.parts[pi.Name] = pi.Partitions
			for _, n := range pi.Partitions {
				partition[n] = true
			}
		}
		l.names = append(l.names, pi.Name)
	}
	for _, n := range names {
		_, isP := l.parts[n]
		_, isBad := l.bad[n]
		if !partition[n] && !isP && !isBad {
			l.names = append(l.names, n)
		}
	}
	slices.Sort(l.names)
	return l, nil
}

// overviewRow is the overview's row of name.
func (h *handler) overviewRow(ctx context.Context, l *listing, name string) queueRow {
	partitioned := false
	switch _, isP := l.parts[name]; {
	case l.bad[name] != "":
		return queueRow{Name: name, Shown: shown(name), URL: h.queueURL(name), status: http.StatusBadGateway,
			Err: message("Redis holds a bad partition table: " + l.bad[name])}
	case isP:
		partitioned = true
	case l.probe && checkName("queue name", name) == nil:
		_, err := redisq.PartitionNames(ctx, h.c, name)
		switch {
		case err == nil:
			partitioned = true
		case !errors.Is(err, redisq.ErrNoQueue):
			row := queueRow{Name: name, Shown: shown(name), URL: h.queueURL(name)}
			var msg string
			row.status, msg = h.tableStatus(name, err)
			row.Err = message(msg)
			return row
		}
	}
	if !partitioned {
		return h.row(ctx, name, true)
	}
	p, err := h.openPartitioned(ctx, name)
	if err != nil {
		row := queueRow{Name: name, Shown: shown(name), URL: h.queueURL(name)}
		var msg string
		row.status, msg = h.tableStatus(name, err)
		row.Err = message(msg)
		return row
	}
	defer p.Close()
	return h.prow(ctx, p, true)
}

// partRow is one partition in the partitions table of a partitioned
// queue's page.
type partRow struct {
	Index       int
	Name, Shown string
	URL         string // its own page
	Stats       redisq.Stats
	PausedSince when
	// Workers is how many live workers it has (see countWorkers), when
	// they were read.
	Workers      int
	WorkersKnown bool
}

// countWorkers counts the live workers ws of each partition of parts.
func countWorkers(parts []partRow, ws []redisq.WorkerInfo) {
	n := map[string]int{}
	for _, w := range ws {
		n[w.Queue]++
	}
	for i := range parts {
		parts[i].Workers, parts[i].WorkersKnown = n[parts[i].Name], true
	}
}

// prow is the row of the partitioned queue p: the sums of its partitions'
// Stats (the rates are those of the sums), each partition's Stats, and
// how many are paused.
func (h *handler) prow(ctx context.Context, p *redisq.Partitioned, live bool) queueRow {
	name := p.Name()
	row := queueRow{Name: name, Shown: shown(name), URL: h.queueURL(name), Parts: p.NumPartitions()}
	ss, err := p.PartitionStats(ctx)
	if err != nil {
		var msg string
		row.status, msg = h.redisStatus(err)
		row.Err = message(msg)
		return row
	}
	row.Stats = redisq.SumStats(ss)
	for i, st := range ss {
		pn := p.Partition(i).Name()
		row.PartRows = append(row.PartRows, partRow{Index: i, Name: pn, Shown: shown(pn), URL: h.queueURL(pn), Stats: st,
			PausedSince: at(st.PausedSince, st.Now)})
		if st.Paused {
			row.PausedParts++
		}
	}
	row.Rates = h.rates.observe(name, row.Stats)
	row.PausedSince = at(row.Stats.PausedSince, row.Stats.Now)
	if live && row.Stats.DueBacklog > 0 {
		if ws, err := p.Workers(ctx); err == nil {
			row.NoWorker, row.NoWorkerBadge = noWorker(row.Stats, row.PartRows, ws)
		}
	}
	return row
}

// parentOf fills in the partitioned queue that the ordinary queue of d is
// a partition of, if any: the name before its last '~' when that queue's
// partition table names it (one HGETALL; a failure shows nothing).
func (h *handler) parentOf(ctx context.Context, d *queueData) {
	i := strings.LastIndex(d.Name, "~")
	if i <= 0 {
		return
	}
	parent := d.Name[:i]
	parts, err := redisq.PartitionNames(ctx, h.c, parent)
	if err != nil {
		return
	}
	if k := slices.Index(parts, d.Name); k >= 0 {
		d.Parent, d.ParentShown, d.ParentURL, d.PartIndex, d.ParentParts = parent, shown(parent), h.queueURL(parent), k, len(parts)
		d.Crumbs = append(d.Crumbs[:len(d.Crumbs)-1], crumb{shown(parent), d.ParentURL}, d.Crumbs[len(d.Crumbs)-1])
	}
}

// locate returns the partition of p that holds id: its routing partition
// when the id is there (one GetPrefix without payload), else the ones
// Locate finds (one GetPrefix per partition), for an item enqueued under
// an ordering key. It returns redisq.ErrNotFound when none holds it.
func locate(ctx context.Context, p *redisq.Partitioned, id string) ([]int, error) {
	i := p.PartitionOf(id)
	_, err := p.Partition(i).GetPrefix(ctx, id, 0)
	if !errors.Is(err, redisq.ErrNotFound) {
		return []int{i}, err
	}
	return p.Locate(ctx, id)
}

// findPartitioned is find on a partitioned queue: the id found (exactly,
// else without the spaces around it) and the partitions that hold it, or
// "" and nil.
func (h *handler) findPartitioned(ctx context.Context, p *redisq.Partitioned, id string) (string, []int, error) {
	for _, c := range []string{id, strings.TrimSpace(id)} {
		if c == "" {
			continue
		}
		at, err := locate(ctx, p, c)
		switch {
		case err == nil:
			return c, at, nil
		case !errors.Is(err, redisq.ErrNotFound):
			return "", nil, err
		}
	}
	return "", nil, nil
}

// partitionLabel is `"emails" (3 partitions)`, or `"emails"` for an
// ordinary queue (n 0).
func partitionLabel(name string, n int) string {
	if n == 0 {
		return quoted(name)
	}
	return quoted(name) + " (" + count(int64(n), "partition") + ")"
}

// maxCursorOffset bounds an offset of a cursor: far above any list's
// length (a Redis sorted set holds fewer than 1<<32 members), and
// redisq.MaxPartitions of them add up within an int64.
const maxCursorOffset = 1 << 53

// parseCursor parses the cursor parameter: n offsets, comma-separated
// ("" is the first page), each 0..maxCursorOffset in decimal. The count is checked
// before the split, so that a long cursor costs no more than its bytes.
func parseCursor(s string, n int) ([]int64, error) {
	if s == "" {
		return nil, nil
	}
	if k := strings.Count(s, ",") + 1; k != n {
		return nil, fmt.Errorf("cursor %s has %d offsets; the queue has %s", quoted(s), k, count(int64(n), "partition"))
	}
	fields := strings.Split(s, ",")
	cur := make([]int64, n)
	for i, f := range fields {
		v, err := strconv.ParseInt(f, 10, 64)
		if !decimal(f) || err != nil || v > maxCursorOffset {
			return nil, fmt.Errorf("cursor %s: offset %s is not a number in 0..%d", quoted(s), quoted(f), int64(maxCursorOffset))
		}
		cur[i] = v
	}
	return cur, nil
}

// formatCursor is a cursor as the cursor parameter takes it: "17,16,17".
func formatCursor(cur []int64) string {
	s := make([]string, len(cur))
	for i, v := range cur {
		s[i] = strconv.FormatInt(v, 10)
	}
	return strings.Join(s, ",")
}

// plist fills in a state's tab of a partitioned queue: one page of its
// items merged across partitions, from the cursor parameter, with a
// partition column, the selection's form and the actions on the whole
// state. The pager goes to the first and the next page only: a cursor
// does not go back.
func (h *handler) plist(ctx context.Context, r *http.Request, p *redisq.Partitioned, d *queueData) error {
	size := pageSize(d.State)
	cur, err := parseCursor(r.URL.Query().Get("cursor"), p.NumPartitions())
	if err != nil {
		return badRequest{err}
	}
	page, err := p.List(ctx, d.State, redisq.PartitionedListOptions{Cursor: cur, Limit: size, Reason: d.Reason, Kind: d.Kind})
	busy := make([]bool, len(page.Items))
	if err == nil && d.State == redisq.StateCompleted {
		items := make([]redisq.Item, len(page.Items))
		for i := range page.Items {
			items[i] = page.Items[i].Item
		}
		busy, err = h.withResults(ctx, func(i int) *redisq.Queue { return p.Partition(page.Items[i].Partition) }, items)
		for i := range items {
			page.Items[i].Item = items[i]
		}
	}
	if err == nil && d.State == redisq.StateDead {
		err = h.readingPayloads(ctx, func() error {
			for i := range page.Items {
				var err error
				if busy[i], err = h.previewPayload(ctx, p.Partition(page.Items[i].Partition), &page.Items[i].Item); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err != nil {
		return err
	}
	for i, it := range page.Items {
		pn := p.Partition(it.Partition).Name()
		row := h.itemRow(pn, it.Item, page.Now, previewBytes)
		row.Busy = busy[i]
		if d.State == redisq.StateCompleted {
			row.Busy, row.ResultBusy = false, row.Busy
		}
		row.HasPart, row.Part, row.PartName, row.PartShown, row.PartURL = true, it.Partition, pn, shown(pn), h.tabURL(pn, d.State)
		row.Holder, row.HasHolder = d.holder(pn, it.Item)
		row.KindURL = h.kindURL(d.Name, d.State, d.Reason, it.Kind) // the partitioned queue's list, not the partition's
		if row.IDX != "" {
			row.PIDX = strconv.Itoa(it.Partition) + "." + row.IDX
		}
		d.Items = append(d.Items, row)
		d.Selection = d.Selection || row.IDX != ""
	}
	var before int64
	for _, v := range cur {
		before += v
	}
	d.Pager = pager{From: before + 1, To: before + int64(len(d.Items)), Total: page.Total, Past: len(d.Items) == 0 && page.Total > 0}
	if d.Reason != "" || d.Kind != "" {
		fp := filteredPager(d)
		d.Pager.Filtered, d.Pager.Shown, d.Pager.Of, d.Pager.Among = true, fp.Shown, fp.Of, fp.Among
	}
	link := func(next []int64) string {
		v := r.URL.Query()
		v.Del("find")
		v.Del("offset")
		v.Del("cursor")
		if next != nil {
			v.Set("cursor", formatCursor(next))
		}
		return h.opt.Prefix + "queue?" + v.Encode()
	}
	if cur != nil {
		d.Pager.First = link(nil)
	}
	if page.Next != nil {
		d.Pager.Next = link(page.Next)
	}
	if h.opt.ReadOnly {
		return nil
	}
	h.actionsOfList(d, page.Total)
	return nil
}

// badRequest is an error of the request, not of Redis: a 400.
type badRequest struct{ error }

// previewPayload reads the start of it's payload into it, for a list of
// dead items, within the handler's payload budget: busy when the budget
// left it unread.
func (h *handler) previewPayload(ctx context.Context, q *redisq.Queue, it *redisq.Item) (busy bool, err error) {
	if it.PayloadSize == 0 || it.PayloadSize > previewScan || len(it.ID) > MaxName {
		return false, nil
	}
	// Redis copies the whole payload to cut its start.
	if !h.budget.take(it.PayloadSize) {
		return true, nil
	}
	pre, err := q.GetPrefix(ctx, it.ID, previewRead)
	if errors.Is(err, redisq.ErrNotFound) {
		return false, nil // gone meanwhile: shown without its payload
	}
	if err != nil {
		return false, err
	}
	h.budget.charge(copied(pre.PayloadSize) - it.PayloadSize) // replaced meanwhile
	if pre.PayloadSize == it.PayloadSize {
		it.Payload = pre.Payload
	}
	return false, nil
}

// pausedParts counts the paused partitions of t (1 or 0 of 1 for an
// ordinary queue), one round trip per partition.
func pausedParts(ctx context.Context, t *target) (k, n int, err error) {
	if t.q != nil {
		b, err := t.q.Paused(ctx)
		if b {
			k = 1
		}
		return k, 1, err
	}
	n = t.p.NumPartitions()
	for i := range n {
		b, err := t.p.Partition(i).Paused(ctx)
		if err != nil {
			return 0, n, err
		}
		if b {
			k++
		}
	}
	return k, n, nil
}

// resolver returns, for the k-th id of a, the Queue to act on: the
// ordinary queue, or the partition the form named for it, or the one
// that holds it: for a single id, locate's (errSeveral: several
// partitions hold it, none its routing one); for one of several ids, its
// routing partition, if the id is there (one GetPrefix; errNotRouted
// otherwise), so that a selection of MaxSelect ids does not cost
// MaxSelect Locates of redisq.MaxPartitions round trips each.
func resolver(ctx context.Context, t *target, a action) func(k int) (*redisq.Queue, error) {
	return func(k int) (*redisq.Queue, error) {
		if t.q != nil {
			return t.q, nil
		}
		if a.Parts != nil && a.Parts[k] >= 0 {
			return t.p.Partition(a.Parts[k]), nil
		}
		if len(a.IDs) > 1 {
			q := t.p.Partition(t.p.PartitionOf(a.IDs[k]))
			_, err := q.GetPrefix(ctx, a.IDs[k], 0)
			if errors.Is(err, redisq.ErrNotFound) {
				return nil, errNotRouted
			}
			return q, err
		}
		at, err := locate(ctx, t.p, a.IDs[k])
		switch {
		case err != nil:
			return nil, err
		case len(at) > 1:
			return nil, errSeveral
		}
		return t.p.Partition(at[0]), nil
	}
}

// errSeveral: an id is in several partitions, none its routing one.
var errSeveral = errors.New("in several partitions")

// errNotRouted: one of several ids is not in its routing partition (it
// may be in another, under an ordering key, or nowhere).
var errNotRouted = errors.New("not in its routing partition")

// itemOfPartitioned opens the page of item id of the partitioned queue
// p: on its partition (see locate; the id is matched exactly, as on an
// ordinary queue's item page), or a 404, or a 409 naming the partitions
// when several hold it.
func (h *handler) itemOfPartitioned(ctx context.Context, w http.ResponseWriter, r *http.Request, p *redisq.Partitioned, id string) {
	at, err := locate(ctx, p, id)
	switch {
	case errors.Is(err, redisq.ErrNotFound):
		h.fail(w, r, http.StatusNotFound, "no item %s in queue %s (it may have been acked or deleted)", quoted(id), partitionLabel(p.Name(), p.NumPartitions()))
	case err != nil:
		h.redisFail(w, r, err, fmt.Sprintf("finding item %s in queue %s", quoted(id), quoted(p.Name())))
	case len(at) == 1:
		h.redirectToPartition(w, r, p, at[0], id)
	default:
		var names []string
		for _, k := range at {
			names = append(names, quoted(p.Partition(k).Name()))
		}
		h.fail(w, r, http.StatusConflict, "item %s is in %s of queue %s: %s; open it on a partition's page", quoted(id),
			count(int64(len(at)), "partition"), quoted(p.Name()), strings.Join(names, ", "))
	}
}

// redirectToPartition sends the request to the page of item id in
// partition k of p, or answers 400 when that partition's name is too long
// for the dashboard to open (a name of p near MaxName).
func (h *handler) redirectToPartition(w http.ResponseWriter, r *http.Request, p *redisq.Partitioned, k int, id string) {
	pn := p.Partition(k).Name()
	u := h.itemURL(pn, id)
	if u == "" {
		h.fail(w, r, http.StatusBadRequest, "item %s is in partition %d of queue %s, whose name is too long for the dashboard (%d bytes; at most %d): use dqctl",
			quoted(id), k, quoted(p.Name()), len(pn), MaxName)
		return
	}
	http.Redirect(w, r, u, http.StatusSeeOther)
}

// foundLinks are the links to item id in the partitions at of p (a
// partition too long to open has no link).
func (h *handler) foundLinks(p *redisq.Partitioned, id string, at []int) []crumb {
	var out []crumb
	for _, k := range at {
		pn := p.Partition(k).Name()
		out = append(out, crumb{fmt.Sprintf("partition %d %s", k, shown(pn)), h.itemURL(pn, id)})
	}
	return out
}

// pidx is the form value of item id in partition part: "part.HEXID".
func pidx(part int, id string) string {
	return strconv.Itoa(part) + "." + hex.EncodeToString([]byte(id))
}

// decimal reports whether s is a number as the pages write it: ASCII
// digits, no sign, no leading zero.
func decimal(s string) bool {
	return s != "" && (s == "0" || s[0] != '0') && strings.Trim(s, "0123456789") == ""
}

// parsePidx parses a pidx form value: the partition in decimal (ASCII
// digits, no sign, no leading zero), a dot, the id in hex.
func parsePidx(s string) (int, string, error) {
	ps, hx, ok := strings.Cut(s, ".")
	part, err := strconv.Atoi(ps)
	if !ok || !decimal(ps) || err != nil || part < 0 || part >= redisq.MaxPartitions {
		return 0, "", fmt.Errorf("bad form field pidx %s", quoted(s))
	}
	b, err := hex.DecodeString(hx)
	if err != nil {
		return 0, "", fmt.Errorf("bad form field pidx: %v", err)
	}
	return part, string(b), nil
}
