package dqweb

import (
	"context"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"

	"github.com/dq-go/delayqueue/redisq"
)

// Dead letters by cause: the dead tab groups the dead items by their
// reason (redisq Queue.DeadReasons, oldest death first, at most
// deadReasonScan of them: one script per 1000, no payload read), most
// frequent first, each cause with its count, first and last death, a link
// to the dead list filtered by it (state=dead&reason=R, the exact bytes;
// List with ListOptions.Reason, whose pages examine up to 1000 dead items
// each, so a page may hold fewer items than its size, or none, and still
// have a next one) and the actions on every dead item of that cause
// (ops requeue-reason and delete-reason, the cause in the form field
// reasonx, hex-encoded: RequeueDeadByReason and DeleteDeadByReason, in
// batches of 200 examined dead items). When the dead set is larger than
// what was grouped, the tab says so ("grouped the oldest 10,000 of
// 25,000"), and the actions' questions say that the newer items of the
// cause are acted on too. Only the dead tab's first page groups (later
// pages link to it); a filtered view reads the grouping again for its
// cause's count, as does the confirmation of an action on a cause. A partitioned queue is grouped on every partition
// (deadReasonScan / P of each, at least 1000) and merged.

// deadReasonScan is how many dead items (the oldest) the dead tab groups
// (a variable for tests).
var deadReasonScan int64 = 10_000

// reasonsShown is how many causes the dead tab lists; the others are
// counted.
const reasonsShown = 50

// reasonCell bounds a cause as the grouping's table shows it; the filtered
// view shows it up to maxShownReason.
const reasonCell = 300

// reasonsView is the dead tab's grouping by cause.
type reasonsView struct {
	Rows           []reasonRow
	More           int // causes not listed
	Dead, Examined int64
	Complete       bool
}

// reasonRow is one cause of death.
type reasonRow struct {
	Shown       string
	Count       int64
	First, Last when
	// URL is the dead list of this cause, "" when it cannot be filtered
	// by (an empty reason, or one longer than MaxName).
	URL             string
	Requeue, Delete actionForm // no Op in read-only mode, or without URL
}

// reasonFilter is the cause a dead list is filtered by.
type reasonFilter struct {
	Shown string // quoted
	// Count is how many of the dead items grouped died of it.
	Count          int64
	Complete       bool
	Examined, Dead int64
	AllURL         string // the dead list unfiltered
}

// deadReasonsOf groups the dead items of t by cause.
func deadReasonsOf(ctx context.Context, t *target) (redisq.DeadReasonSummary, error) {
	if t.p != nil {
		return t.p.DeadReasons(ctx, max(1000, deadReasonScan/int64(t.p.NumPartitions())))
	}
	return t.q.DeadReasons(ctx, deadReasonScan)
}

// reasonURL is the dead list of queue name filtered by reason, "" when it
// cannot be.
func (h *handler) reasonURL(name, reason string) string {
	u := h.tabURL(name, redisq.StateDead)
	if u == "" || reason == "" || len(reason) > MaxName {
		return ""
	}
	return u + "&" + url.Values{"reason": {reason}}.Encode()
}

// reasonForm is the button of an action on every dead item of a cause
// (op requeue-reason or delete-reason), asking with what the grouping
// counted.
func (h *handler) reasonForm(d *queueData, op, reason string, n int64, sum redisq.DeadReasonSummary) actionForm {
	a := action{Op: op, Queue: d.Name, Reason: reason, Count: n, Grouped: sum.Examined, DeadTotal: sum.Dead, NParts: d.Parts}
	return actionForm{Prefix: h.opt.Prefix, CSRF: d.CSRF, Op: op, QueueX: d.QueueX, ReasonX: hex.EncodeToString([]byte(reason)),
		Label: ops[op].label, Confirm: a.question(), Danger: ops[op].danger}
}

// deadGrouping fills in the dead tab's grouping (unfiltered) or the
// filter's count (filtered by d.Reason).
func (h *handler) deadGrouping(ctx context.Context, t *target, d *queueData) error {
	sum, err := deadReasonsOf(ctx, t)
	if err != nil {
		return err
	}
	if d.Reason != "" {
		f := &reasonFilter{Shown: quotedReason(d.Reason), Complete: sum.Complete(), Examined: sum.Examined, Dead: sum.Dead,
			AllURL: h.tabURL(d.Name, redisq.StateDead)}
		if d.Kind != "" {
			f.AllURL = h.kindURL(d.Name, redisq.StateDead, "", d.Kind) // every cause, of the kind
		}
		for _, g := range sum.Reasons {
			if g.Reason == d.Reason {
				f.Count = g.Count
			}
		}
		d.Filter = f
		if !h.opt.ReadOnly {
			d.Whole = nil
			for _, op := range []string{"requeue-reason", "delete-reason"} {
				d.Whole = append(d.Whole, h.reasonForm(d, op, d.Reason, f.Count, sum))
			}
		}
		return nil
	}
	v := &reasonsView{Dead: sum.Dead, Examined: sum.Examined, Complete: sum.Complete()}
	for i, g := range sum.Reasons {
		if i == reasonsShown {
			v.More = len(sum.Reasons) - i
			break
		}
		row := reasonRow{Shown: show(g.Reason, reasonCell, false), Count: g.Count, First: at(g.First, sum.Now), Last: at(g.Last, sum.Now),
			URL: h.reasonURL(d.Name, g.Reason)}
		if row.URL != "" && !h.opt.ReadOnly {
			row.Requeue = h.reasonForm(d, "requeue-reason", g.Reason, g.Count, sum)
			row.Delete = h.reasonForm(d, "delete-reason", g.Reason, g.Count, sum)
		}
		v.Rows = append(v.Rows, row)
	}
	d.Reasons = v
	return nil
}

// reasonParam is the dead list's filter: the reason parameter, exactly.
func reasonParam(r *http.Request, state redisq.State) (string, error) {
	reason := r.URL.Query().Get("reason")
	switch {
	case reason == "":
	case state != redisq.StateDead:
		return "", fmt.Errorf("a reason filters the dead tab, not %s", quoted(state.String()))
	case len(reason) > MaxName:
		return "", fmt.Errorf("reason of %d bytes is too long for the dashboard (at most %d): use dqctl", len(reason), MaxName)
	}
	return reason, nil
}

// reasonQuestion is the question of an action on every dead item of a's
// cause, with the count the grouping found.
func (a action) reasonQuestion() string {
	q, why := partitionLabel(a.Queue, a.NParts), quotedReason(a.Reason)
	var verb, then string
	switch a.Op {
	case "requeue-reason":
		verb, then = "Requeue", "They become due now, attempts reset."
	default:
		verb, then = "Delete", "This cannot be undone."
	}
	if a.Grouped >= a.DeadTotal {
		return fmt.Sprintf("%s all %s of queue %s that died of %s? %s", verb, count(a.Count, "dead item"), q, why, then)
	}
	return fmt.Sprintf("%s every dead item of queue %s that died of %s? %s of the oldest %s grouped (of %s) died of it; the newer ones of this cause are acted on too. %s",
		verb, q, why, num(a.Count), count(a.Grouped, "dead item"), num(a.DeadTotal), then)
}
