package dqweb

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/dq-go/delayqueue/redisq"
)

// Mutations are POSTs to Prefix+"action" carrying the form fields op, q
// (the queue), the item ids (id, repeated for a selection), state, reg
// (a recurring registration's name) or key and a limit (see
// limitactions.go) as the op needs, csrf, and
// confirmed=yes once the user has confirmed. A POST without confirmed gets
// a confirmation page (the page's script asks with a dialog instead and
// sets the field), so nothing changes unconfirmed even without JavaScript.
// The pages' forms send the queue, ids, registration and limit key
// hex-encoded, as qx, idx, regx and keyx (which win over q, id, reg and
// key): HTML cannot carry every byte string through a form unchanged
// (NUL, invalid UTF-8, and CR and LF, which form submission rewrites).
// The form body is at most 64 KiB and must arrive within
// Options.FormTimeout.
//
// Actions on items take 1 to MaxSelect ids (a selection of one page at
// most), one redisq call each; on a partitioned queue, an id sent without
// its partition costs one GetPrefix more to find its partition (its
// routing one), or, for a single id, at most one per partition (see
// resolver). Actions on a whole state run in redisq's batches.
//
// CSRF: the token is a random value in a SameSite=Strict, HttpOnly cookie
// scoped to Prefix, repeated in every form (double submit), and
// http.CrossOriginProtection rejects cross-origin requests by their
// Sec-Fetch-Site and Origin headers.

const csrfCookie = "dqweb_csrf"

// MaxSelect is the most items one action changes by id: a page's worth.
const MaxSelect = PageSize

// maxSelectID is the longest id the lists offer for a selection: with
// MaxSelect of them, hex-encoded, a form stays within maxForm. Longer ids
// have their own actions, and the item page.
const maxSelectID = 256

// csrfToken returns the request's token, setting a new cookie when it has
// none.
func (h *handler) csrfToken(w http.ResponseWriter, r *http.Request) string {
	if c, err := r.Cookie(csrfCookie); err == nil && len(c.Value) == 43 {
		return c.Value
	}
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	tok := base64.RawURLEncoding.EncodeToString(b)
	http.SetCookie(w, &http.Cookie{Name: csrfCookie, Value: tok, Path: h.opt.Prefix,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	return tok
}

var crossOrigin = http.NewCrossOriginProtection()

func checkCSRF(r *http.Request) error {
	if err := crossOrigin.Check(r); err != nil {
		return err
	}
	c, err := r.Cookie(csrfCookie)
	if err != nil {
		return errors.New("no CSRF cookie")
	}
	if subtle.ConstantTimeCompare([]byte(c.Value), []byte(r.PostFormValue("csrf"))) != 1 {
		return errors.New("the form's CSRF token does not match the cookie")
	}
	return nil
}

// op is one kind of action.
type op struct {
	ids       bool   // acts on 1..MaxSelect item ids
	reg       bool   // acts on a recurring registration
	limit     bool   // sets a limit key's limit, or the queue's own rate limit (see limitactions.go)
	reason    bool   // acts on the dead items of one cause of death
	needState bool   // acts on a whole state
	label     string // the button
	danger    bool
}

var ops = map[string]op{
	"requeue":         {ids: true, label: "Requeue"},
	"delete-dead":     {ids: true, label: "Delete", danger: true},
	"delete":          {ids: true, label: "Delete", danger: true},
	"run-now":         {ids: true, label: "Run now"},
	"requeue-all":     {label: "Requeue all"},
	"delete-all-dead": {label: "Delete all", danger: true},
	"requeue-reason":  {reason: true, label: "Requeue all"},
	"delete-reason":   {reason: true, label: "Delete all", danger: true},
	"purge":           {needState: true, label: "Purge", danger: true},
	"pause":           {label: "Pause", danger: true},
	"resume":          {label: "Resume"},
	"unregister":      {reg: true, label: "Unregister", danger: true},
	// Pausing cancels the pending occurrence: as dangerous as pausing a queue.
	"pause-recurring":   {reg: true, label: "Pause", danger: true},
	"resume-recurring":  {reg: true, label: "Resume"},
	"rate-limit":        {limit: true, label: "Set rate limit"},
	"concurrency-limit": {limit: true, label: "Set concurrency limit"},
	queueRateOp:         {limit: true, label: "Set queue rate limit"},
}

// action is a parsed request.
type action struct {
	Op, Queue string
	IDs       []string
	Reg       string // the registration unregister, pause-recurring or resume-recurring acts on
	// Key is the limit key whose limit a limit action sets ("": the items
	// without one; none for the queue's own rate limit), to Rate or K;
	// Remove: to none. WasRate and WasConc are the limit as last read,
	// for the question.
	Key     string
	Rate    redisq.RateLimit
	K       int
	Remove  bool
	WasRate redisq.LimitState
	WasConc redisq.ConcurrencyState
	// Reason is the cause of death of the dead items requeue-reason and
	// delete-reason act on; Grouped and DeadTotal are how many dead items
	// the grouping that counted them (Count) examined, of how many.
	Reason             string
	Grouped, DeadTotal int64
	// Tab is the tab a run-now was asked from when it is not a state's
	// (the Recurring tab), for the page to go back to.
	Tab string
	// State is the state purge empties; for actions on items, the state
	// of the list they were selected in (0 if unknown), for the wording.
	State redisq.State
	// Count is how many items an action on a whole state changes, as
	// last read (for the question).
	Count int64
	// Parts, when the form named partitions (pidx), is the partition of
	// each id; nil otherwise.
	Parts []int
	// PartName is the name of the partition of the only id, when the form
	// named it, for the wording.
	PartName string
	// NParts is the partition count of a partitioned queue (0: ordinary),
	// for the wording.
	NParts int
}

// hidden is a hidden field of a form.
type hidden struct{ Name, Value string }

// IDFields are the form fields that carry the ids: pidx where the
// partition is known, idx otherwise.
func (a action) IDFields() []hidden {
	out := make([]hidden, len(a.IDs))
	for i, id := range a.IDs {
		if a.Parts != nil && a.Parts[i] >= 0 {
			out[i] = hidden{"pidx", pidx(a.Parts[i], id)}
		} else {
			out[i] = hidden{"idx", hex.EncodeToString([]byte(id))}
		}
	}
	return out
}

// stateNoun is "dead item", "scheduled item", "in-flight item",
// "completed item" or "item".
func stateNoun(s redisq.State) string {
	switch s {
	case redisq.StateScheduled:
		return "scheduled item"
	case redisq.StateInFlight:
		return "in-flight item"
	case redisq.StateDead:
		return "dead item"
	case redisq.StateCompleted:
		return "completed item"
	}
	return "item"
}

// count is "1 dead item", "3,272 dead items".
func count(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return num(n) + " " + noun + "s"
}

// place is where the only item of a is: `of queue "jobs" (3
// partitions)`, or `in partition 2 ("jobs~2.x") of queue "jobs"` when the
// form named its partition; prep ("of" or "in") starts the first.
func (a action) place(prep string) string {
	if a.PartName != "" && len(a.Parts) == 1 {
		return fmt.Sprintf("in partition %d (%s) of queue %s", a.Parts[0], quoted(a.PartName), quoted(a.Queue))
	}
	return prep + " queue " + partitionLabel(a.Queue, a.NParts)
}

// question is what the action asks before it is done.
func (a action) question() string {
	if len(a.IDs) == 1 {
		id, at := quoted(a.IDs[0]), a.place("of")
		switch a.Op {
		case "requeue":
			return fmt.Sprintf("Requeue dead item %s %s? It becomes due now, attempts reset.", id, at)
		case "delete-dead":
			return fmt.Sprintf("Delete dead item %s %s? This cannot be undone.", id, at)
		case "delete":
			switch a.State {
			case redisq.StateScheduled, redisq.StateDead, redisq.StateCompleted:
				return fmt.Sprintf("Delete %s %s %s? This cannot be undone.", stateNoun(a.State), id, at)
			case redisq.StateInFlight:
				return fmt.Sprintf("Delete in-flight item %s %s? It is marked: deleted when its consumer settles it, never retried.", id, at)
			}
			return fmt.Sprintf("Delete item %s %s? An in-flight item is marked instead: deleted when its consumer settles it, never retried.", id, at)
		case "run-now":
			if name, t, ok := redisq.Occurrence(a.IDs[0]); ok {
				return fmt.Sprintf("Run %s %s now? It is an occurrence of recurring %s: while it waits for its time (%s), an extra run is enqueued, due now, "+
					"and it stays, so the schedule's run still happens; if it is already due, it keeps its place.", id, at, quoted(name), t.UTC().Format(absFormat))
			}
			if a.State == redisq.StateCompleted {
				return fmt.Sprintf("Run completed item %s %s again? It is requeued, due now, attempts reset, and runs again.", id, at)
			}
			return fmt.Sprintf("Run item %s %s now? If it is not yet due, it becomes due now, behind the items already due; if it is already due, it keeps its place; a dead item is requeued.", id, at)
		}
	}
	return a.manyQuestion(int64(len(a.IDs)))
}

// manyQuestion is the question of an action on n selected items (or on
// a whole state or queue, where n is ignored).
func (a action) manyQuestion(n int64) string {
	return a.questionWith(func(noun string) string { return count(n, noun) })
}

// manyQuestionN is manyQuestion with the count written as n (for the
// page's script, which puts in the number of items selected).
func (a action) manyQuestionN(n string) string {
	return a.questionWith(func(noun string) string { return n + " " + noun + "s" })
}

func (a action) questionWith(items func(noun string) string) string {
	q := partitionLabel(a.Queue, a.NParts)
	switch a.Op {
	case "requeue":
		return fmt.Sprintf("Requeue %s of queue %s? They become due now, attempts reset.", items("dead item"), q)
	case "delete-dead":
		return fmt.Sprintf("Delete %s of queue %s? This cannot be undone.", items("dead item"), q)
	case "delete":
		switch a.State {
		case redisq.StateInFlight:
			return fmt.Sprintf("Delete %s of queue %s? They are marked: deleted when their consumers settle them, never retried.", items("in-flight item"), q)
		case redisq.StateScheduled, redisq.StateDead, redisq.StateCompleted:
			return fmt.Sprintf("Delete %s of queue %s? This cannot be undone.", items(stateNoun(a.State)), q)
		}
		return fmt.Sprintf("Delete %s of queue %s? In-flight ones are marked instead: deleted when their consumers settle them, never retried.", items("item"), q)
	case "run-now":
		if a.State == redisq.StateCompleted {
			return fmt.Sprintf("Run %s of queue %s again? They are requeued, due now, attempts reset, and run again.", items("completed item"), q)
		}
		return fmt.Sprintf("Run %s of queue %s now? Those not yet due become due now, behind the items already due; those already due keep their place; "+
			"a recurring occurrence waiting for its time stays, and an extra run of it is enqueued, due now.", items("scheduled item"), q)
	case "requeue-reason", "delete-reason":
		return a.reasonQuestion()
	case "requeue-all":
		return fmt.Sprintf("Requeue all %s of queue %s? They become due now, attempts reset.", count(a.Count, "dead item"), q)
	case "delete-all-dead":
		return fmt.Sprintf("Delete all %s of queue %s? This cannot be undone.", count(a.Count, "dead item"), q)
	case "purge":
		if a.State == redisq.StateInFlight {
			return fmt.Sprintf("Purge %s of queue %s? They are marked: deleted when their consumers settle them, never retried.", count(a.Count, "in-flight item"), q)
		}
		return fmt.Sprintf("Purge %s of queue %s? They are deleted; this cannot be undone.", count(a.Count, stateNoun(a.State)), q)
	case "pause":
		return fmt.Sprintf("Pause queue %s? Consumers take nothing until it is resumed; enqueues, acks and admin actions go on.", q)
	case "resume":
		return fmt.Sprintf("Resume queue %s? Consumers take its due items again at once.", q)
	case "unregister":
		return fmt.Sprintf("Unregister %s of queue %s? No occurrence of it is enqueued any more; its last one, if still scheduled, is cancelled.", quoted(a.Reg), q)
	case "pause-recurring":
		return fmt.Sprintf("Pause recurring %s of queue %s? No occurrence of it is enqueued until it is resumed, and its pending occurrence, if not yet due, is cancelled (one already due is delivered); the registration stays.", quoted(a.Reg), q)
	case "resume-recurring":
		return fmt.Sprintf("Resume recurring %s of queue %s? Its first occurrence after now is enqueued; those that fell in the pause are skipped.", quoted(a.Reg), q)
	case "rate-limit", "concurrency-limit", queueRateOp:
		return a.limitQuestion()
	}
	return ""
}

// maxForm bounds an action's form body: two hex-encoded names of MaxName
// bytes, or a name and MaxSelect ids of maxSelectID bytes, and the rest
// fit.
const maxForm = 64 << 10

// formValue is the form field key, or its hex-encoded twin key+"x".
func formValue(r *http.Request, key string) (string, error) {
	if x, ok := r.PostForm[key+"x"]; ok && len(x) > 0 {
		b, err := hex.DecodeString(x[0])
		if err != nil {
			return "", fmt.Errorf("bad form field %sx: %v", key, err)
		}
		return string(b), nil
	}
	return r.PostFormValue(key), nil
}

// formIDs is every id of the form: the hex-encoded idx fields, or the
// pidx fields (an id of a partitioned queue with its partition, "i.HEX"),
// or the id fields, without repeats (an id in two partitions is two
// items); parts is the partition of each id, nil without pidx fields. A
// form with both idx and pidx is refused: an idx id may be a pidx one
// again, which only Redis could tell.
func formIDs(r *http.Request) (ids []string, parts []int, err error) {
	xs, okx := r.PostForm["idx"]
	pxs, okp := r.PostForm["pidx"]
	switch {
	case okx && okp:
		return nil, nil, errors.New("the form has both idx and pidx fields: send the ids with their partitions (pidx) or without (idx), not both")
	case okx:
		for _, x := range xs {
			b, err := hex.DecodeString(x)
			if err != nil {
				return nil, nil, fmt.Errorf("bad form field idx: %v", err)
			}
			ids = append(ids, string(b))
		}
		return uniqueIDs(ids, nil)
	case okp:
		for _, x := range pxs {
			part, id, err := parsePidx(x)
			if err != nil {
				return nil, nil, err
			}
			ids, parts = append(ids, id), append(parts, part)
		}
		return uniqueIDs(ids, parts)
	}
	return uniqueIDs(r.PostForm["id"], nil)
}

// uniqueIDs is ids without repeats: of an id, or, with parts (the
// partition of each id), of an id in its partition; the first stays.
func uniqueIDs(ids []string, parts []int) ([]string, []int, error) {
	type key struct {
		part int
		id   string
	}
	seen := make(map[key]bool, len(ids))
	var outIDs []string
	var outParts []int
	for k, id := range ids {
		part := -1
		if parts != nil {
			part = parts[k]
		}
		if seen[key{part, id}] {
			continue
		}
		seen[key{part, id}] = true
		outIDs = append(outIDs, id)
		if parts != nil {
			outParts = append(outParts, part)
		}
	}
	return outIDs, outParts, nil
}

func (h *handler) action(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		h.fail(w, r, http.StatusMethodNotAllowed, "actions are POST only")
		return
	}
	if h.opt.ReadOnly {
		h.fail(w, r, http.StatusForbidden, "this dashboard is read-only")
		return
	}
	// A read deadline for the body, where the server supports one (an
	// http.Server's connections do). It stays set: after a timeout the
	// server discards what is left of the body within it too, and the
	// server sets its own deadlines again before the next request.
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(h.opt.FormTimeout))
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil {
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &tooBig):
			h.fail(w, r, http.StatusRequestEntityTooLarge, "the form is larger than %d bytes", maxForm)
		case errors.Is(err, os.ErrDeadlineExceeded):
			w.Header().Set("Connection", "close")
			h.fail(w, r, http.StatusRequestTimeout, "the form did not arrive within %v", h.opt.FormTimeout)
		default:
			h.fail(w, r, http.StatusBadRequest, "bad form: %v", err)
		}
		return
	}
	if err := checkCSRF(r); err != nil {
		h.fail(w, r, http.StatusForbidden, "refused (%v); reload the page and try again", err)
		return
	}
	a := action{Op: r.PostFormValue("op")}
	queue, err := formValue(r, "q")
	ids, parts, err2 := formIDs(r)
	reg, err3 := formValue(r, "reg")
	reason, err4 := formValue(r, "reason")
	if err = errors.Join(err, err2, err3, err4); err != nil {
		h.fail(w, r, http.StatusBadRequest, "%v", err)
		return
	}
	a.Queue, a.IDs, a.Reg, a.Parts, a.Reason = queue, ids, reg, parts, reason
	o, ok := ops[a.Op]
	if !ok {
		h.fail(w, r, http.StatusBadRequest, "unknown action %s", quoted(a.Op))
		return
	}
	if err := parseLimitForm(r, &a); err != nil {
		h.fail(w, r, http.StatusBadRequest, "%v", err)
		return
	}
	if s := r.PostFormValue("state"); s != "" || o.needState {
		st, err := redisq.ParseState(s)
		if err != nil {
			h.fail(w, r, http.StatusBadRequest, "%v", err)
			return
		}
		a.State = st
	}
	switch {
	case o.ids && len(a.IDs) == 0:
		h.fail(w, r, http.StatusBadRequest, "action %s needs an item id: select one or more items", a.Op)
		return
	case o.ids && len(a.IDs) > MaxSelect:
		h.fail(w, r, http.StatusBadRequest, "action %s on %d items: at most %d at once (a page)", a.Op, len(a.IDs), MaxSelect)
		return
	case o.ids:
		for _, id := range a.IDs {
			if err := checkName("item id", id); err != nil {
				h.fail(w, r, http.StatusBadRequest, "%v", err)
				return
			}
		}
	case len(a.IDs) > 0:
		h.fail(w, r, http.StatusBadRequest, "action %s takes no item id", a.Op)
		return
	}
	switch {
	case o.reg && a.Reg == "":
		h.fail(w, r, http.StatusBadRequest, "action %s needs a registration name", a.Op)
		return
	case o.reg && len(a.Reg) > redisq.MaxRegistrationName:
		h.fail(w, r, http.StatusBadRequest, "registration name %s is too long (%d bytes; at most %d)", quoted(a.Reg), len(a.Reg), redisq.MaxRegistrationName)
		return
	case !o.reg && a.Reg != "":
		h.fail(w, r, http.StatusBadRequest, "action %s takes no registration name", a.Op)
		return
	}
	switch {
	case o.reason && a.Reason == "":
		h.fail(w, r, http.StatusBadRequest, "action %s needs a cause of death (reason)", a.Op)
		return
	case o.reason && len(a.Reason) > MaxName:
		h.fail(w, r, http.StatusBadRequest, "reason of %d bytes is too long for the dashboard (at most %d): use dqctl", len(a.Reason), MaxName)
		return
	case !o.reason && a.Reason != "":
		h.fail(w, r, http.StatusBadRequest, "action %s takes no reason", a.Op)
		return
	}
	switch tab := r.PostFormValue("tab"); {
	case tab == "":
	case tab == recurringTab && a.Op == "run-now":
		a.Tab = tab
	default:
		h.fail(w, r, http.StatusBadRequest, "bad form field tab %s", quoted(tab))
		return
	}
	t := h.target(r.Context(), w, r, a.Queue)
	if t == nil {
		return
	}
	defer t.Close()
	if t.p != nil {
		a.NParts = t.p.NumPartitions()
		if o.reg || a.Tab != "" {
			h.fail(w, r, http.StatusBadRequest, "queue %s is partitioned: its recurring registrations are on its partitions' pages", quoted(a.Queue))
			return
		}
		if o.limit && a.Op == queueRateOp {
			h.fail(w, r, http.StatusBadRequest, "queue %s is partitioned: redisq sets no rate limit on a whole partitioned queue (Partitioned has no SetQueueRateLimit)", quoted(a.Queue))
			return
		}
		if o.limit {
			h.fail(w, r, http.StatusBadRequest, "queue %s is partitioned: redisq limits no partitioned queue (it refuses limit keys, which would be limited per partition)", quoted(a.Queue))
			return
		}
		for _, k := range a.Parts {
			if k >= a.NParts {
				h.fail(w, r, http.StatusBadRequest, "queue %s has no partition %d (it has %d)", quoted(a.Queue), k, a.NParts)
				return
			}
		}
		if len(a.IDs) == 1 && a.Parts != nil {
			a.PartName = t.p.Partition(a.Parts[0]).Name()
		}
	} else if a.Parts != nil {
		// An ordinary queue has no partitions: the same id under two of
		// them is one item.
		a.IDs, a.Parts, _ = uniqueIDs(a.IDs, nil)
	}
	if r.PostFormValue("confirmed") != "yes" {
		if err := h.countFor(r.Context(), t, &a); err != nil {
			h.redisFail(w, r, err, "reading queue "+quoted(a.Queue))
			return
		}
		label, danger := a.button()
		h.render(w, http.StatusOK, "confirm", struct {
			layout
			Action   action
			Question string
			Label    string
			Danger   bool
			Back     string
		}{h.layout(w, r, "Confirm", false), a, a.question(), label, danger, h.backURL(a)})
		return
	}
	status, msg := h.do(r.Context(), t, a)
	// Redirect after POST: a reload of the result shows it again, and
	// does nothing.
	id := h.results.put(r, result{status: status, msg: message(msg), back: h.listURL(a), queue: quoted(a.Queue)})
	http.Redirect(w, r, h.opt.Prefix+"result?r="+id, http.StatusSeeOther)
}

// An action's POST is answered 303 See Other to Prefix+"result?r=ID", a
// page that shows what the action did: reloading it shows that again and
// changes nothing. The result is kept in the handler's memory, for
// resultTTL, at most maxResults of them (the oldest go first), and is
// shown only to the browser that posted it (its CSRF cookie): another
// handler (a replica behind a load balancer) does not have it, and says
// so.
const (
	maxResults = 1000
	resultTTL  = 10 * time.Minute
)

// result is what an action did, as its result page shows it.
type result struct {
	status           int
	msg, back, queue string

	id    string
	owner [sha256.Size]byte // the poster's CSRF cookie, hashed
	at    time.Time
}

// results keeps the recent results by id. Safe for concurrent use.
type results struct {
	mu    sync.Mutex
	byID  map[string]*result // guarded by mu
	order []*result          // guarded by mu: oldest first
}

// put keeps res for the browser that sent r (whose CSRF cookie checkCSRF
// has checked) and returns its id, a random one.
func (rs *results) put(r *http.Request, res result) string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	res.id, res.at = hex.EncodeToString(b), time.Now()
	if c, err := r.Cookie(csrfCookie); err == nil {
		res.owner = sha256.Sum256([]byte(c.Value))
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.byID == nil {
		rs.byID = map[string]*result{}
	}
	for len(rs.order) > 0 && (len(rs.order) >= maxResults || time.Since(rs.order[0].at) > resultTTL) {
		delete(rs.byID, rs.order[0].id)
		rs.order = rs.order[1:]
	}
	rs.byID[res.id] = &res
	rs.order = append(rs.order, &res)
	return res.id
}

// get returns the result id kept for the browser that sent r.
func (rs *results) get(r *http.Request, id string) (result, bool) {
	c, err := r.Cookie(csrfCookie)
	if err != nil {
		return result{}, false
	}
	owner := sha256.Sum256([]byte(c.Value))
	rs.mu.Lock()
	defer rs.mu.Unlock()
	res := rs.byID[id]
	if res == nil || time.Since(res.at) > resultTTL || subtle.ConstantTimeCompare(owner[:], res.owner[:]) != 1 {
		return result{}, false
	}
	return *res, true
}

// resultPage shows the result of an action (see results).
func (h *handler) resultPage(w http.ResponseWriter, r *http.Request) {
	res, ok := h.results.get(r, r.URL.Query().Get("r"))
	if !ok {
		h.fail(w, r, http.StatusNotFound, "this action's result is no longer here: results are kept %v, by the dashboard that did the action, for the browser that asked; the queue's page shows what is there now", resultTTL)
		return
	}
	if res.status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "5")
	}
	h.render(w, res.status, "result", struct {
		layout
		OK      bool
		Message string
		Back    string
		Queue   string
	}{h.layout(w, r, "Done", false), res.status == http.StatusOK, res.msg, res.back, res.queue})
}

// countFor reads how many items an action on a whole state (or on the
// dead items of a cause) would change, for its question.
func (h *handler) countFor(ctx context.Context, t *target, a *action) error {
	if ops[a.Op].limit {
		return readLimit(ctx, t.q, a) // the question says what it changes
	}
	switch a.Op {
	case "requeue-all", "delete-all-dead", "purge":
	case "requeue-reason", "delete-reason":
		sum, err := deadReasonsOf(ctx, t)
		if err != nil {
			return err
		}
		a.Grouped, a.DeadTotal = sum.Examined, sum.Dead
		for _, g := range sum.Reasons {
			if g.Reason == a.Reason {
				a.Count = g.Count
			}
		}
		return nil
	default:
		return nil
	}
	st, err := t.Stats(ctx)
	if err != nil {
		return err
	}
	switch {
	case a.Op != "purge" || a.State == redisq.StateDead:
		a.Count = st.Dead
	case a.State == redisq.StateScheduled:
		a.Count = st.Scheduled
	case a.State == redisq.StateCompleted:
		a.Count = st.Completed
	default:
		a.Count = st.InFlight
	}
	return nil
}

// backURL is where the confirmation page's Cancel goes: the page of the
// only item (in its partition, when the form named it), else the list.
func (h *handler) backURL(a action) string {
	switch {
	case len(a.IDs) != 1:
	case a.PartName != "":
		if u := h.itemURL(a.PartName, a.IDs[0]); u != "" {
			return u
		}
	default:
		return h.itemURL(a.Queue, a.IDs[0])
	}
	return h.listURL(a)
}

// listURL is the tab an action was taken from: its state's, the
// Recurring tab, or the summary's limits.
func (h *handler) listURL(a action) string {
	switch {
	case ops[a.Op].reg, a.Tab == recurringTab:
		return h.recurringURL(a.Queue)
	case ops[a.Op].limit:
		if u := h.queueURL(a.Queue); u != "" {
			return u + "#limits"
		}
		return ""
	case ops[a.Op].reason:
		return h.tabURL(a.Queue, redisq.StateDead)
	}
	return h.tabURL(a.Queue, a.State)
}

// outcome sorts the ids of an action on items by what became of them.
type outcome struct {
	done, marked, gone, wrong []string
	several                   []string // in several partitions: left alone
	unrouted                  []string // not in their routing partitions: left alone
	// Of a run-now, what RunNow did to the items done (done holds those
	// it moved): due already, kept in place; dead, requeued; recurring
	// occurrences, each with its extra run.
	due, requeued []string
	waiting       []string // RunNowWaiting: due, waiting for a rate slot
	waitingPlace  []string // RunNowWaitingForPlace: due, waiting for a place
	extra         []runNowExtra
}

// runNowExtra is an occurrence that RunNow left in place, and its extra
// run.
type runNowExtra struct {
	id  string
	res redisq.RunNowResult
}

// names lists up to 5 ids, quoted.
func names(ids []string) string {
	var b strings.Builder
	for i, id := range ids {
		if i == 5 {
			fmt.Fprintf(&b, " and %d more", len(ids)-5)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(quoted(id))
	}
	return b.String()
}

// do runs the action and reports it as an HTTP status and a sentence.
func (h *handler) do(ctx context.Context, t *target, a action) (int, string) {
	switch {
	case ops[a.Op].ids:
		return h.doItems(ctx, resolver(ctx, t, a), a)
	case ops[a.Op].reg:
		return h.doRegistration(ctx, t.q, a)
	case ops[a.Op].limit:
		return h.doLimit(ctx, t.q, a)
	}
	q := t.Admin
	ql := partitionLabel(a.Queue, a.NParts)
	var n int64
	var err error
	var done string
	switch a.Op {
	case "requeue-all":
		n, err = q.RequeueAllDead(ctx)
		done = fmt.Sprintf("Requeued %s of queue %s.", count(n, "dead item"), ql)
	case "delete-all-dead":
		n, err = q.DeleteAllDead(ctx)
		done = fmt.Sprintf("Deleted %s of queue %s.", count(n, "dead item"), ql)
	case "requeue-reason":
		n, err = q.RequeueDeadByReason(ctx, a.Reason)
		done = fmt.Sprintf("Requeued %s of queue %s that died of %s: they are due now.", count(n, "dead item"), ql, quotedReason(a.Reason))
	case "delete-reason":
		n, err = q.DeleteDeadByReason(ctx, a.Reason)
		done = fmt.Sprintf("Deleted %s of queue %s that died of %s.", count(n, "dead item"), ql, quotedReason(a.Reason))
	case "purge":
		n, err = q.Purge(ctx, a.State)
		verb := "deleted"
		if a.State == redisq.StateInFlight {
			verb = "marked cancelled"
		}
		done = fmt.Sprintf("Purged queue %s: %s %s.", ql, verb, count(n, a.State.String()+" item"))
	case "pause", "resume":
		var k, n int
		k, n, err = pausedParts(ctx, t)
		switch {
		case err != nil:
		case a.Op == "pause" && k == n:
			return http.StatusOK, fmt.Sprintf("Queue %s is already paused; nothing changed.", ql)
		case a.Op == "resume" && k == 0:
			return http.StatusOK, fmt.Sprintf("Queue %s is already running; nothing changed.", ql)
		case a.Op == "pause":
			err = q.Pause(ctx)
			done = fmt.Sprintf("Paused queue %s: consumers take nothing until it is resumed.", ql)
		default:
			err = q.Resume(ctx)
			done = fmt.Sprintf("Resumed queue %s: consumers take its due items again.", ql)
		}
	}
	switch {
	case err == nil:
		return http.StatusOK, done
	case errors.Is(err, redisq.ErrNoQueue):
		return http.StatusNotFound, fmt.Sprintf("Queue %s has no data (any more); nothing changed.", ql)
	}
	status, msg := h.actionStatus(err)
	if n > 0 {
		return status, fmt.Sprintf("%s changed, then: %s", count(n, "item"), msg)
	}
	return status, "Failed: " + msg
}

// actionStatus is redisStatus for the failure of an action: when the
// Redis user may not run a command the action needs, it says that the
// action changes the queue, which a read-only user cannot, rather than to
// grant the command.
func (h *handler) actionStatus(err error) (int, string) {
	var pe *redisq.PermissionError
	if errors.As(err, &pe) && pe.Command != "" {
		return http.StatusBadGateway, fmt.Sprintf("the dashboard's Redis user may not change queue %s (it may not run %s, which this action needs): "+
			"serve the dashboard of a read-only user read-only (dqctl serve -readonly, dqweb.Options.ReadOnly), "+
			"or as a user that may change queues (dqoperator in docs/operations.md): %v", quoted(pe.Queue), pe.Command, pe.Err)
	}
	return h.redisStatus(err)
}

// doItems runs an action on its ids, one redisq call each, and reports
// what became of them. A Redis error stops it.
func (h *handler) doItems(ctx context.Context, queueOf func(k int) (*redisq.Queue, error), a action) (int, string) {
	var o outcome
	var failure error
	for k, id := range a.IDs {
		q, err := queueOf(k)
		marked := false
		switch {
		case err != nil:
		case a.Op == "requeue":
			err = q.RequeueDead(ctx, id)
		case a.Op == "delete-dead":
			err = q.DeleteDead(ctx, id)
		case a.Op == "delete":
			var out redisq.CancelOutcome
			out, err = q.Cancel(ctx, id)
			marked = out == redisq.CancelMarked
		case a.Op == "run-now":
			var res redisq.RunNowResult
			res, err = q.RunNow(ctx, id)
			if err == nil {
				switch res.Outcome {
				case redisq.RunNowAlreadyDue:
					o.due = append(o.due, id)
					continue
				case redisq.RunNowWaiting:
					o.waiting = append(o.waiting, id)
					continue
				case redisq.RunNowWaitingForPlace:
					o.waitingPlace = append(o.waitingPlace, id)
					continue
				case redisq.RunNowRequeued:
					o.requeued = append(o.requeued, id)
					continue
				case redisq.RunNowExtra:
					o.extra = append(o.extra, runNowExtra{id, res})
					continue
				}
			}
		}
		switch {
		case err == nil && marked:
			o.marked = append(o.marked, id)
		case err == nil:
			o.done = append(o.done, id)
		case errors.Is(err, redisq.ErrNotFound):
			o.gone = append(o.gone, id)
		case errors.Is(err, redisq.ErrNotDead), errors.Is(err, redisq.ErrInFlight):
			o.wrong = append(o.wrong, id)
		case errors.Is(err, errSeveral):
			o.several = append(o.several, id)
		case errors.Is(err, errNotRouted):
			o.unrouted = append(o.unrouted, id)
		default:
			failure = err
		}
		if failure != nil {
			break
		}
	}
	qn := partitionLabel(a.Queue, a.NParts)
	var msg string
	if len(a.IDs) == 1 && failure == nil {
		id := quoted(a.IDs[0])
		switch {
		case len(o.several) == 1:
			return http.StatusConflict, fmt.Sprintf("Item %s is in several partitions of queue %s; nothing changed: act on it from the list, or on its partition's page.", id, qn)
		case len(o.gone) == 1:
			return http.StatusNotFound, fmt.Sprintf("No item %s %s; nothing changed.", id, a.place("in"))
		case len(o.wrong) == 1 && a.Op == "run-now":
			return http.StatusConflict, fmt.Sprintf("Item %s is in flight (a consumer has it); nothing changed.", id)
		case len(o.wrong) == 1:
			return http.StatusConflict, fmt.Sprintf("Item %s is not dead (any more); nothing changed.", id)
		case len(o.marked) == 1:
			return http.StatusOK, fmt.Sprintf("Marked in-flight item %s: it is deleted when its consumer settles it, and never retried.", id)
		case len(o.waiting) == 1:
			return http.StatusOK, fmt.Sprintf("Item %s %s is due and waits for a slot under its limit key's rate limit: left in its place (nothing changed); it runs at its slot.", id, a.place("of"))
		case len(o.waitingPlace) == 1:
			return http.StatusOK, fmt.Sprintf("Item %s %s is due and waits for a place under its limit key's concurrency limit: left in its place (nothing changed); it runs when a place frees.", id, a.place("of"))
		case len(o.due) == 1:
			return http.StatusOK, fmt.Sprintf("Item %s %s was already due: left in its place, ahead of the items due after it (nothing changed); it runs as soon as a consumer takes it.", id, a.place("of"))
		case len(o.requeued) == 1 && a.State == redisq.StateCompleted:
			return http.StatusOK, fmt.Sprintf("Item %s %s was completed: requeued, due now, attempts reset; it runs again.", id, a.place("of"))
		case len(o.requeued) == 1:
			return http.StatusOK, fmt.Sprintf("Item %s %s was dead: requeued, due now, attempts reset (counted as a requeue).", id, a.place("of"))
		case len(o.extra) == 1:
			x := o.extra[0]
			name, t, _ := redisq.Occurrence(x.id)
			return http.StatusOK, fmt.Sprintf("Extra run %s of recurring %s enqueued %s, due now; the scheduled run %s at %s stays.",
				quoted(x.res.ID), quoted(name), a.place("in"), id, t.UTC().Format(absFormat))
		}
		switch a.Op {
		case "requeue":
			return http.StatusOK, fmt.Sprintf("Requeued dead item %s: it is due now.", id)
		case "delete-dead":
			return http.StatusOK, fmt.Sprintf("Deleted dead item %s.", id)
		case "delete":
			return http.StatusOK, fmt.Sprintf("Deleted item %s.", id)
		default:
			return http.StatusOK, fmt.Sprintf("Item %s of queue %s is due now: it was not yet due, and runs behind the items already due.", id, qn)
		}
	}
	n := int64(len(o.done))
	switch a.Op {
	case "requeue":
		msg = fmt.Sprintf("Requeued %s of queue %s: they are due now.", count(n, "dead item"), qn)
	case "delete-dead":
		msg = fmt.Sprintf("Deleted %s of queue %s.", count(n, "dead item"), qn)
	case "delete":
		msg = fmt.Sprintf("Deleted %s of queue %s.", count(n, "item"), qn)
		if len(o.marked) > 0 {
			msg += fmt.Sprintf(" Marked %s: deleted when their consumers settle them, never retried.", count(int64(len(o.marked)), "in-flight item"))
		}
	default:
		msg = runNowMessage(o, qn, a.State)
	}
	if len(o.wrong) > 0 {
		state := "not dead (any more)"
		if a.Op == "run-now" {
			state = "in flight"
		}
		msg += fmt.Sprintf(" Nothing changed for %s, %s: %s.", count(int64(len(o.wrong)), "item"), state, names(o.wrong))
	}
	if len(o.gone) > 0 {
		msg += fmt.Sprintf(" Gone meanwhile (acked or deleted): %s.", names(o.gone))
	}
	if len(o.several) > 0 {
		msg += fmt.Sprintf(" Nothing changed for %s in several partitions (act on each from the list): %s.", count(int64(len(o.several)), "item"), names(o.several))
	}
	if len(o.unrouted) > 0 {
		msg += fmt.Sprintf(" Nothing changed for %s not in their routing partitions (an item enqueued under an ordering key is acted on from the list, which names its partition): %s.", count(int64(len(o.unrouted)), "item"), names(o.unrouted))
	}
	if failure != nil {
		status, m := h.actionStatus(failure)
		return status, msg + " Then: " + m
	}
	if len(o.done)+len(o.marked)+len(o.due)+len(o.waiting)+len(o.waitingPlace)+len(o.requeued)+len(o.extra) == 0 {
		if len(o.wrong)+len(o.several) > 0 {
			return http.StatusConflict, msg
		}
		return http.StatusNotFound, msg
	}
	return http.StatusOK, msg
}

// runNowMessage reports a run-now on several items of queue qn (quoted),
// selected in a list of state, by what RunNow did to each.
func runNowMessage(o outcome, qn string, state redisq.State) string {
	var parts []string
	if n := int64(len(o.done)); n > 0 || len(o.due)+len(o.waiting)+len(o.waitingPlace)+len(o.requeued)+len(o.extra) == 0 {
		parts = append(parts, fmt.Sprintf("Made %s of queue %s due now.", count(n, "item"), qn))
	}
	if len(o.due) > 0 {
		parts = append(parts, fmt.Sprintf("Left %s of queue %s in place, already due (ahead of the items due after them): %s.", count(int64(len(o.due)), "item"), qn, names(o.due)))
	}
	if len(o.waiting) > 0 {
		parts = append(parts, fmt.Sprintf("Left %s of queue %s in place, due and waiting for a rate limit slot: %s.", count(int64(len(o.waiting)), "item"), qn, names(o.waiting)))
	}
	if len(o.waitingPlace) > 0 {
		parts = append(parts, fmt.Sprintf("Left %s of queue %s in place, due and waiting for a place under a concurrency limit: %s.", count(int64(len(o.waitingPlace)), "item"), qn, names(o.waitingPlace)))
	}
	if len(o.requeued) > 0 {
		had := "died"
		if state == redisq.StateCompleted {
			had = "completed"
		}
		parts = append(parts, fmt.Sprintf("Requeued %s of queue %s that had %s, due now (counted as requeues): %s.", count(int64(len(o.requeued)), "item"), qn, had, names(o.requeued)))
	}
	if len(o.extra) > 0 {
		ids := make([]string, len(o.extra))
		for i, x := range o.extra {
			ids[i] = x.res.ID
		}
		parts = append(parts, fmt.Sprintf("Enqueued %s of recurring occurrences, due now; the occurrences stay at their times: %s.", count(int64(len(o.extra)), "extra run"), names(ids)))
	}
	return strings.Join(parts, " ")
}
