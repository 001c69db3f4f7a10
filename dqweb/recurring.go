package dqweb

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/dq-go/delayqueue/redisq"
)

// The queue page's Recurring tab lists the queue's recurring registrations
// (redisq Queue.Register), a page of PageSize at a time, sorted by name:
// schedule, next occurrence (marked when it is in the past: no process
// keeps the registration), last occurrence, catch-up bound, version and
// payload size, each name linking to the item of its occurrence enqueued
// last while that item is in the queue, with an Unregister action (op
// "unregister", the name in the form field reg, or regx hex-encoded), and
// Pause or Resume (ops "pause-recurring" and "resume-recurring": redisq
// Queue.PauseRecurring, which cancels the pending occurrence if it is not
// yet due, and ResumeRecurring, which enqueues the first occurrence after
// now, skipping those of the pause).
//
// Every view of the queue page reads the registrations (Queue.Registrations:
// one script per 100 registrations, without payloads), for the tab's
// count, and the tab is shown only when there are some. The tab itself
// also looks up the item of each registration on its page (at most
// PageSize GetPrefix calls, no payload read). A failure to read them is
// the tab's count "?" on the other tabs, whose pages are still shown, and
// the error page on the Recurring tab.

// recurringTab is the value of the state parameter of the Recurring tab.
const recurringTab = "recurring"

// behindNote is the tooltip of a next occurrence in the past.
const behindNote = "no process keeps it: a Worker (or Queue.KeepRecurring) enqueues each next occurrence a period ahead, and none has run since this one came"

// orphanNote explains an orphaned registration (redisq
// Registration.Orphaned), and what to do.
const orphanNote = "orphaned: no live code registers it (its Register call was removed, or every process running it stopped, or they run no keeper). " +
	"A keeper still enqueues its occurrences: Unregister it once its code is gone."

// recurringURL is the queue's Recurring tab.
func (h *handler) recurringURL(name string) string {
	u := h.queueURL(name)
	if u != "" {
		u += "&state=" + recurringTab
	}
	return u
}

// policyText is a registration's occurrence policy in a few words.
func policyText(g redisq.Registration) string {
	var p []string
	if g.Overlap == redisq.OverlapSkip {
		p = append(p, "skip overlap")
	}
	if g.CatchUpWindow > 0 {
		p = append(p, "window "+g.CatchUpWindow.String())
	}
	return strings.Join(p, ", ")
}

// regRow is a registration as the Recurring tab shows it.
type regRow struct {
	NameShown, Spec string
	SpecErr         string // why this process cannot compute its occurrences
	Long            bool   // the name may wrap
	Next, Last      when
	Paused          when // when PauseRecurring paused it (unset: not paused)
	Behind, Ended   bool
	CatchUp         int
	// Policy is its occurrence policy ("skip overlap, window 10m0s", ""
	// for none: redisq Overlap, CatchUpWindow); Skipped the occurrences
	// it skipped, with the last one's reason (shown: anyone may have
	// written it).
	Policy      string
	Skipped     int64
	SkipReason  string
	Version     int64
	PayloadSize int64
	// ItemURL is the page of the item of the occurrence enqueued last, ""
	// when it is no longer in the queue; ItemShown its id, ItemState its
	// state.
	ItemURL, ItemShown, ItemState string
	// Seen is when live code last registered it; Orphaned: not within
	// redisq.OrphanAfter (see orphanNote).
	Seen       when
	Orphaned   bool
	Unregister actionForm // no Op in read-only mode
	// Pause pauses it, or resumes it when paused; no Op in read-only
	// mode or once it has ended.
	Pause actionForm
	// RunNow runs an extra occurrence now, keeping the scheduled one: on
	// the item of its next occurrence while that waits for its time.
	RunNow actionForm
}

// behindRegs counts the registrations whose next occurrence is before
// now (Redis TIME read before them): no process keeps them.
func behindRegs(regs []redisq.Registration, now time.Time) int {
	n := 0
	for _, g := range regs {
		if isBehind(g, now) {
			n++
		}
	}
	return n
}

func isBehind(g redisq.Registration, now time.Time) bool {
	return !g.Ended && !g.Next.IsZero() && g.Next.Before(now)
}

// orphanedRegs counts the registrations no live code has registered
// within redisq.OrphanAfter before now.
func orphanedRegs(regs []redisq.Registration, now time.Time) int {
	n := 0
	for _, g := range regs {
		if g.Orphaned(now) {
			n++
		}
	}
	return n
}

// recurringTabLink is the Recurring tab's link, or false when the queue
// has no registrations (and the tab is not the one shown). A failure to
// read them shows the tab with its count unknown, saying why.
func (h *handler) recurringTabLink(name string, regs []redisq.Registration, err error, now time.Time, current bool) (tabLink, bool) {
	t := tabLink{Label: "Recurring", State: recurringTab, URL: h.recurringURL(name), Count: int64(len(regs)), Current: current}
	if err != nil {
		_, msg := h.redisStatus(err)
		t.Err = message("the recurring registrations cannot be read: " + msg)
		return t, true
	}
	them := func(n int) string {
		if n == 1 {
			return "it"
		}
		return "them"
	}
	var says []string
	if n := behindRegs(regs, now); n > 0 {
		t.Alert = true
		says = append(says, fmt.Sprintf("%s behind: no process keeps %s", count(int64(n), "registration"), them(n)))
	}
	if n := orphanedRegs(regs, now); n > 0 {
		t.Alert = true
		says = append(says, fmt.Sprintf("%s orphaned: no live code registers %s", num(int64(n)), them(n)))
	}
	t.Title = strings.Join(says, "; ")
	return t, len(regs) > 0 || current
}

// recurringList fills in the Recurring tab: one page of the registrations,
// each with the item of its occurrence enqueued last when it is still in
// the queue.
func (h *handler) recurringList(ctx context.Context, r *http.Request, q *redisq.Queue, regs []redisq.Registration, d *queueData) error {
	total := int64(len(regs))
	off := offset(r, "offset")
	page := regs[min(off, total):min(off+PageSize, total)]
	for _, g := range page {
		row := regRow{NameShown: shown(g.Name), Spec: shown(g.Spec), Last: at(g.Last, d.Now), Next: at(g.Next, d.Now),
			Behind: isBehind(g, d.Now), Ended: g.Ended, CatchUp: g.CatchUp, Version: g.Version, PayloadSize: g.PayloadSize,
			Seen: at(g.Seen, d.Now), Orphaned: g.Orphaned(d.Now), Paused: at(g.Paused, d.Now),
			Policy: policyText(g), Skipped: g.Skipped}
		if g.LastSkipReason != "" {
			row.SkipReason = shownReason(string(g.LastSkipReason))
		}
		row.Long = len(row.NameShown) > longID
		if g.SpecErr != nil && g.Next.IsZero() {
			row.SpecErr = message(g.SpecErr.Error())
		}
		if g.EnqueuedID != "" {
			it, err := q.GetPrefix(ctx, g.EnqueuedID, 0) // no payload read
			switch {
			case err == nil:
				row.ItemURL, row.ItemShown, row.ItemState = h.itemURL(d.Name, it.ID), quoted(it.ID), it.State.String()
				if it.State == redisq.StateScheduled && it.Due.After(d.Now) && row.ItemURL != "" && !h.opt.ReadOnly {
					a := action{Op: "run-now", Queue: d.Name, IDs: []string{it.ID}, State: redisq.StateScheduled}
					row.RunNow = actionForm{Prefix: h.opt.Prefix, CSRF: d.CSRF, Op: a.Op, QueueX: d.QueueX, IDX: hex.EncodeToString([]byte(it.ID)),
						Tab: recurringTab, State: "scheduled", Label: ops[a.Op].label, Confirm: a.question()}
				}
			case !errors.Is(err, redisq.ErrNotFound):
				return err
			}
		}
		if !h.opt.ReadOnly {
			row.Unregister = h.regForm(d, "unregister", g.Name)
			switch {
			case g.Ended:
			case g.Paused.IsZero():
				row.Pause = h.regForm(d, "pause-recurring", g.Name)
			default:
				row.Pause = h.regForm(d, "resume-recurring", g.Name)
			}
		}
		d.Regs = append(d.Regs, row)
	}
	d.Behind = behindRegs(regs, d.Now)
	d.Orphaned = orphanedRegs(regs, d.Now)
	d.Pager = h.pager(r, "offset", off, int64(len(page)), total, PageSize)
	return nil
}

// regForm is the button of op on registration name of d's queue.
func (h *handler) regForm(d *queueData, op, name string) actionForm {
	a := action{Op: op, Queue: d.Name, Reg: name}
	return actionForm{Prefix: h.opt.Prefix, CSRF: d.CSRF, Op: op, QueueX: d.QueueX,
		RegX: hex.EncodeToString([]byte(name)), Label: ops[op].label, Confirm: a.question(), Danger: ops[op].danger}
}

// doRegistration runs an action on a registration and reports it.
func (h *handler) doRegistration(ctx context.Context, q *redisq.Queue, a action) (int, string) {
	switch a.Op {
	case "pause-recurring":
		return h.doPauseRecurring(ctx, q, a)
	case "resume-recurring":
		return h.doResumeRecurring(ctx, q, a)
	}
	reg, qn := quoted(a.Reg), quoted(a.Queue)
	cancelled, err := q.Unregister(ctx, a.Reg)
	switch {
	case errors.Is(err, redisq.ErrNotFound):
		return http.StatusNotFound, fmt.Sprintf("No registration %s in queue %s; nothing changed.", reg, qn)
	case err != nil:
		status, msg := h.actionStatus(err)
		return status, "Failed: " + msg
	case cancelled:
		return http.StatusOK, fmt.Sprintf("Unregistered %s of queue %s; its scheduled occurrence was cancelled.", reg, qn)
	}
	return http.StatusOK, fmt.Sprintf("Unregistered %s of queue %s; no occurrence of it was scheduled (one taken runs to its end).", reg, qn)
}

// doPauseRecurring pauses a registration. It reads the registration
// first, to tell a pause from one already paused (PauseRecurring reports
// both as nothing cancelled).
func (h *handler) doPauseRecurring(ctx context.Context, q *redisq.Queue, a action) (int, string) {
	reg, qn := quoted(a.Reg), quoted(a.Queue)
	g, err := q.Registration(ctx, a.Reg)
	if err == nil && !g.Paused.IsZero() {
		return http.StatusOK, fmt.Sprintf("Recurring %s of queue %s is already paused (since %s); nothing changed.", reg, qn, g.Paused.UTC().Format(absFormat))
	}
	var cancelled bool
	if err == nil {
		cancelled, err = q.PauseRecurring(ctx, a.Reg)
	}
	switch {
	case errors.Is(err, redisq.ErrNotFound):
		return http.StatusNotFound, fmt.Sprintf("No registration %s in queue %s; nothing changed.", reg, qn)
	case err != nil:
		status, msg := h.actionStatus(err)
		return status, "Failed: " + msg
	case cancelled:
		return http.StatusOK, fmt.Sprintf("Paused recurring %s of queue %s: its pending occurrence was cancelled, and none is enqueued until it is resumed.", reg, qn)
	}
	return http.StatusOK, fmt.Sprintf("Paused recurring %s of queue %s: none of its occurrences is enqueued until it is resumed (no pending one was cancelled: none was scheduled, or it was due already and is delivered).", reg, qn)
}

// doResumeRecurring resumes a registration, and says when its next
// occurrence is (one read more).
func (h *handler) doResumeRecurring(ctx context.Context, q *redisq.Queue, a action) (int, string) {
	reg, qn := quoted(a.Reg), quoted(a.Queue)
	resumed, err := q.ResumeRecurring(ctx, a.Reg)
	switch {
	case errors.Is(err, redisq.ErrNotFound):
		return http.StatusNotFound, fmt.Sprintf("No registration %s in queue %s; nothing changed.", reg, qn)
	case err != nil:
		status, msg := h.actionStatus(err)
		return status, "Failed: " + msg
	case !resumed:
		return http.StatusOK, fmt.Sprintf("Recurring %s of queue %s was not paused; nothing changed.", reg, qn)
	}
	next := ""
	if g, err := q.Registration(ctx, a.Reg); err == nil && !g.Next.IsZero() {
		next = ", due " + g.Next.UTC().Format(absFormat)
	}
	return http.StatusOK, fmt.Sprintf("Resumed recurring %s of queue %s: its first occurrence after now is enqueued%s; those that fell in the pause are skipped.", reg, qn, next)
}
