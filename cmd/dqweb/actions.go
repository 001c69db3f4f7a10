package dqweb

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/dq-go/delayqueue/redisq"
)

// Mutations are POSTs to Prefix+"action" carrying the form fields op, q
// (the queue), id or state as the op needs, csrf, and confirmed=yes once
// the user has confirmed. A POST without confirmed gets a confirmation page
// (the page's script asks with a dialog instead and sets the field), so
// nothing changes unconfirmed even without JavaScript. The pages' forms
// send the queue and id hex-encoded, as qx and idx (which win over q and
// id): HTML cannot carry every byte string through a form unchanged (NUL,
// invalid UTF-8, and CR and LF, which form submission rewrites). The form
// body is at most 64 KiB and must arrive within Options.FormTimeout.
//
// CSRF: the token is a random value in a SameSite=Strict, HttpOnly cookie
// scoped to Prefix, repeated in every form (double submit), and
// http.CrossOriginProtection rejects cross-origin requests by their
// Sec-Fetch-Site and Origin headers.

const csrfCookie = "dqweb_csrf"

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
	needID, needState bool
	ask               string // the question, with %s for the target
	label             string // the button
}

var ops = map[string]op{
	"requeue":         {needID: true, ask: "Requeue dead item %s? It becomes due now, attempts reset.", label: "Requeue"},
	"delete-dead":     {needID: true, ask: "Delete dead item %s? This cannot be undone.", label: "Delete"},
	"delete":          {needID: true, ask: "Delete item %s? An in-flight item is marked instead: deleted when its consumer settles it, never retried.", label: "Delete item"},
	"requeue-all":     {ask: "Requeue every dead item of %s? They become due now.", label: "Requeue all dead"},
	"delete-all-dead": {ask: "Delete every dead item of %s? This cannot be undone.", label: "Delete all dead"},
	"purge":           {needState: true, ask: "Purge %s? Scheduled and dead items are deleted, in-flight ones marked cancelled. This cannot be undone.", label: "Purge"},
}

// action is a parsed request.
type action struct {
	Op, Queue, ID string
	State         redisq.State
}

// target names what the action changes, for its question and report.
func (a action) target() string {
	switch {
	case ops[a.Op].needID:
		return fmt.Sprintf("%s of queue %s", quoted(a.ID), quoted(a.Queue))
	case ops[a.Op].needState:
		return fmt.Sprintf("the %s items of queue %s", a.State, quoted(a.Queue))
	}
	return fmt.Sprintf("queue %s", quoted(a.Queue))
}

func (a action) question() string { return fmt.Sprintf(ops[a.Op].ask, a.target()) }

// maxForm bounds an action's form body: two hex-encoded names of MaxName
// bytes and the rest fit.
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
	id, err2 := formValue(r, "id")
	if err = errors.Join(err, err2); err != nil {
		h.fail(w, r, http.StatusBadRequest, "%v", err)
		return
	}
	a.Queue, a.ID = queue, id
	o, ok := ops[a.Op]
	switch {
	case !ok:
		h.fail(w, r, http.StatusBadRequest, "unknown action %s", quoted(a.Op))
		return
	case o.needID && a.ID == "":
		h.fail(w, r, http.StatusBadRequest, "action %s needs an item id", a.Op)
		return
	case o.needID:
		if err := checkName("item id", a.ID); err != nil {
			h.fail(w, r, http.StatusBadRequest, "%v", err)
			return
		}
	case o.needState:
		st, err := redisq.ParseState(r.PostFormValue("state"))
		if err != nil {
			h.fail(w, r, http.StatusBadRequest, "%v", err)
			return
		}
		a.State = st
	}
	q := h.queue(r.Context(), w, r, a.Queue)
	if q == nil {
		return
	}
	if r.PostFormValue("confirmed") != "yes" {
		h.render(w, http.StatusOK, "confirm", struct {
			layout
			Action   action
			Question string
			Label    string
			Back     string
		}{h.layout(w, r, "Confirm", false), a, a.question(), o.label, h.backURL(a)})
		return
	}
	status, msg := h.do(r.Context(), q, a)
	if status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "5")
	}
	h.render(w, status, "result", struct {
		layout
		OK      bool
		Message string
		Back    string
		Queue   string
	}{h.layout(w, r, "Done", false), status == http.StatusOK, message(msg), h.queueURL(a.Queue), quoted(a.Queue)})
}

// backURL is where the confirmation page's Cancel goes.
func (h *handler) backURL(a action) string {
	if a.ID != "" {
		return h.itemURL(a.Queue, a.ID)
	}
	return h.queueURL(a.Queue)
}

// do runs the action and reports it as an HTTP status and a sentence.
func (h *handler) do(ctx context.Context, q *redisq.Queue, a action) (int, string) {
	var n int64
	var err error
	var done string
	switch a.Op {
	case "requeue":
		err = q.RequeueDead(ctx, a.ID)
		done = fmt.Sprintf("Requeued dead item %s: it is due now.", quoted(a.ID))
	case "delete-dead":
		err = q.DeleteDead(ctx, a.ID)
		done = fmt.Sprintf("Deleted dead item %s.", quoted(a.ID))
	case "delete":
		var out redisq.CancelOutcome
		out, err = q.Cancel(ctx, a.ID)
		done = fmt.Sprintf("Deleted item %s.", quoted(a.ID))
		if out == redisq.CancelMarked {
			done = fmt.Sprintf("Marked in-flight item %s: it is deleted when its consumer settles it, and never retried.", quoted(a.ID))
		}
	case "requeue-all":
		n, err = q.RequeueAllDead(ctx)
		done = fmt.Sprintf("Requeued %d dead items of queue %s.", n, quoted(a.Queue))
	case "delete-all-dead":
		n, err = q.DeleteAllDead(ctx)
		done = fmt.Sprintf("Deleted %d dead items of queue %s.", n, quoted(a.Queue))
	case "purge":
		n, err = q.Purge(ctx, a.State)
		verb := "deleted"
		if a.State == redisq.StateInFlight {
			verb = "marked cancelled"
		}
		done = fmt.Sprintf("Purged queue %s: %s %d %s items.", quoted(a.Queue), verb, n, a.State)
	}
	switch {
	case err == nil:
		return http.StatusOK, done
	case errors.Is(err, redisq.ErrNotFound):
		return http.StatusNotFound, fmt.Sprintf("No item %s in queue %s; nothing changed.", quoted(a.ID), quoted(a.Queue))
	case errors.Is(err, redisq.ErrNotDead):
		return http.StatusConflict, fmt.Sprintf("Item %s is not dead (any more); nothing changed.", quoted(a.ID))
	case errors.Is(err, redisq.ErrNoQueue):
		return http.StatusNotFound, fmt.Sprintf("Queue %s has no data (any more); nothing changed.", quoted(a.Queue))
	}
	status, msg := h.redisStatus(err)
	if n > 0 {
		return status, fmt.Sprintf("%d items changed, then: %s", n, msg)
	}
	return status, "Failed: " + msg
}
