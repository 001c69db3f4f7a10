// Package dqweb is a web dashboard for redisq queues: an http.Handler that
// a service mounts under a path prefix, built on redisq's inspection and
// admin API.
//
//	mux.Handle("/dq/", dqweb.Handler(client, dqweb.Options{Prefix: "/dq/"}))
//
// It shows every queue on the server (counts per state, the oldest
// overdue item, paused ones marked with since when, enqueue, delivery and
// ack rates, the error rate, delivery lateness, dead items highlighted,
// "no live worker" where items are due and no Worker beats), sortable by
// its columns (see overview.go), and one queue: a summary (the counters
// with their rates, the history of the last minutes from the dashboard's
// own readings, a chart of the items due over the next hour and the
// overdue backlog, lateness, and its rate and concurrency limits with
// their use: see limits.go) and a tab per state (scheduled in due order,
// in flight with their lease deadlines and the worker that holds each,
// dead with their reason and payload, grouped by cause: see
// deadreasons.go), each with its count, paging, each item's kind (a link
// to the list of that kind: see kinds.go) and the actions that fit it;
// an item's page shows its kind, headers and own options too; when the
// queue has recurring registrations (redisq Queue.Register), a tab of
// them: schedule, true next and last run (a next one in the past
// is marked: no process keeps the registration), when live code last
// registered it (marked orphaned when none has lately), catch-up, version
// and payload size; and a tab of its live workers and the leases they
// run (see workers.go). A search box opens an item by its exact id,
// whatever its state. Every time is shown relative to the Redis clock and
// absolute (UTC) beside it, counts with thousands separators. Unless
// Options.ReadOnly is set, it requeues, deletes or runs now one item, the
// items selected on a page (at most MaxSelect) or every item of a state or
// of a cause of death, pauses or resumes the queue (redisq Queue.Pause),
// sets, changes or removes a limit key's rate or concurrency limit, and
// pauses, resumes or unregisters a recurring registration or runs it now
// (redisq Queue.PauseRecurring cancels its pending occurrence if not yet
// due; ResumeRecurring enqueues its first occurrence after now): each
// action is a POST with a CSRF token, confirmed first (naming the items,
// or their number, or the registration, or the cause, or the key with its
// limit now and the one to set) and reported after, on a page the POST
// redirects to (303 See Other), so that reloading the report repeats
// nothing (see results). Run now is redisq's RunNow, which never
// delays an item: one not yet due becomes due now, one already due keeps
// its place, a dead one is requeued, and the pending occurrence of a
// recurring registration stays at its time while an extra run is enqueued
// due now. It neither registers recurring jobs nor keeps them going (a
// Worker does).
//
// A partitioned queue (redisq.NewPartitioned) is shown as one queue: one
// row of the overview with the sums of its partitions' figures, and a page
// with those sums, a table of its partitions (each an ordinary queue with
// its own page, which links back), lists merged across partitions and
// paged by a cursor, a search that finds an id in whichever partition
// holds it, actions on items routed to their partitions and actions on a
// state or the queue done on every partition (see partitioned.go).
//
// Pages are rendered on the server with html/template (charts are inline
// SVG); the stylesheet and the one small script (auto-refresh,
// confirmation dialogs and the count of a selection) are embedded in the
// binary, and the Content-Security-Policy allows no other script, no
// inline script and no request to another origin. Every page works
// without the script: tabs and pagers are links, and actions are
// confirmed on a page of their own. The handler does not authenticate
// anyone: wrap it in the service's authentication middleware (BasicAuth
// is one).
//
// Hostile data cannot spoof or break a page: names (of queues and
// registrations), ids, kinds, headers and reasons are shown with every control character,
// bidi override or mark and invalid byte escaped, Go-quoted as dqctl
// prints them ("rtl\u202egnp.exe"), and cut when long; links and forms
// carry the exact value. A name or id longer than MaxName is listed but
// not opened (400; dqctl handles it).
//
// DNS rebinding: a page on a name the attacker re-points at the
// dashboard's address is same-origin with it for the browser. The handler
// answers 421, before routing and before anything is read from Redis,
// unless the Host is an IP literal, localhost (or under .localhost) or
// in Options.AllowedHosts (see AllowHosts).
//
// One request's cost is bounded whatever the data: a page reads a
// bounded number of items, and payloads are read with redisq's GetPrefix
// only when they are at most ItemPayloadBytes (64 KiB; the item page
// reads such a payload whole, a dead list previews it): Redis has no
// ranged read of a hash field, so reading any part of a payload copies
// all of it on Redis' main thread. A larger payload is shown by size
// only; `dqctl show` prints it. There is no download, for the same
// reason: every chunk would cost a copy of the whole payload. Across
// requests, the payload bytes read per second are bounded by
// Options.PayloadBytesPerSecond (a token bucket shared by every request):
// past it, pages show payloads by size and say why. At most
// MaxPayloadReads payload reads (and their formatting) run at once per
// handler, which bounds their memory. An
// action on selected items makes one redisq call per item, at most
// MaxSelect. Every page of a queue also reads its recurring registrations
// for the Recurring tab's count (redisq Queue.Registrations, one script
// per 100, without payloads): that grows with their number, not with the
// items'; the tab looks up the item of each of its PageSize rows. It reads
// its live workers too (redisq Queue.Workers: one script, then one per 100
// workers, each heartbeat at most 16 KiB of leases), for the Workers
// tab's count, the warning and the holders on the in-flight tab (no read
// per row). The summary reads a queue's limits only when its Stats count
// some, and only up to 1000 keys of each kind (redisq Queue.RateLimits
// and ConcurrencyLimits: two round trips per 100 keys). The dead tab groups the oldest 10,000 dead items by cause (one
// script per 1000, no payload read). The overview reads, per queue shown,
// its Stats, and its workers when it has due items; sorted by a figure, it
// reads every listed queue (at most 500).
//
// Rates, the error rate and the history come from the Stats readings the
// pages make, kept in the handler's memory (no goroutine, no timer): at
// most one every 2 s per queue over the last minute for the rates, one
// every 10 s over the last 10 minutes for the history, for at most 1000
// queues, about 15 KiB each. They cover the time someone had a page of
// the queue open; Prometheus (dqprom) is the long-term store.
//
// Failures say what failed: 503 when Redis cannot be reached, 504 when it
// does not answer in time, 502 when it answers with an error, 400 for a
// bad request. An action's form is at most 64 KiB and must arrive within
// Options.FormTimeout; the server should bound the rest
// (http.Server's ReadHeaderTimeout, ReadTimeout, IdleTimeout,
// MaxHeaderBytes, as dqctl serve sets them).
package dqweb

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Options configures Handler. The zero value serves every queue on the
// server under "/", with mutations enabled.
type Options struct {
	// Prefix is the path the handler is mounted under, starting and ending
	// with "/" (a missing slash is added); default "/". The handler serves
	// only paths under it, so mount it as mux.Handle(Prefix, h).
	Prefix string
	// ReadOnly hides every action and rejects every POST with 403.
	ReadOnly bool
	// Queues lists the queues the overview shows. Empty: every queue in
	// the server's registry (redisq.ListQueues: the set {dq}:queues, whose
	// cost grows with the number of queues, not of keys), cached for
	// QueueListTTL; queues no process of this redisq version has opened
	// are not in it (dqctl queues -scan finds them). Partitioned queues
	// (redisq.ListPartitioned) are listed in place of their partitions; a
	// name given here may be one (each is looked up: one HGETALL). Queue
	// pages open any name of up to MaxName bytes.
	Queues []string
	// QueueListTTL is how long the list of queues read from the registry
	// is reused; default 30s.
	QueueListTTL time.Duration
	// Title names the dashboard in the page header and title; default
	// "redisq".
	Title string
	// Timeout bounds the Redis work of one page; default 10s. Actions on
	// every dead item or a whole state run in batches until done or the
	// request is cancelled.
	Timeout time.Duration
	// Refresh is how often the overview and a queue's summary reload
	// themselves (the page's script pauses while the user selects text,
	// types a search or a limit, or the tab is hidden; lists of items,
	// where items are selected, do not reload); default 5s, negative
	// disables it.
	Refresh time.Duration
	// AllowedHosts names the hosts the dashboard answers to besides IP
	// literals, localhost and names under .localhost: exact names such as
	// "ops.example.com" (the name a reverse proxy forwards), or
	// "*.example.com"; entries may be comma-separated. Any other Host is
	// answered 421 before anything is read (see AllowHosts).
	AllowedHosts []string
	// FormTimeout bounds the time an action's form body may take to
	// arrive, from the start of the handler; default 10s. A slower client
	// gets 408 and its connection is closed.
	FormTimeout time.Duration
	// PayloadBytesPerSecond bounds the payload bytes the handler has
	// Redis read, per second, across all requests (a token bucket holding
	// a second's worth): reading any part of a payload copies all of it
	// on Redis' main thread. Past it, pages show the payloads they could
	// not read by size, saying why. Default
	// DefaultPayloadBytesPerSecond (4 MiB, a few ms of Redis time a
	// second; see docs/operations.md); negative: no bound.
	PayloadBytesPerSecond int
}

// PageSize is the number of items per page of a list.
const PageSize = 50

// queuesPerPage is the number of queues per page of the overview.
const queuesPerPage = 100

// Handler returns the dashboard for the queues on the Redis server (or
// Cluster) that c talks to. Requests whose Host header is not an IP
// literal, localhost, a name under .localhost or one of
// opt.AllowedHosts are answered 421 Misdirected Request, whatever the
// route (static files too), before anything else: behind a reverse proxy
// that forwards its own name, list that name. It panics if opt.Prefix
// does not start with "/". The handler is safe for concurrent use; it
// never closes c.
func Handler(c redis.UniversalClient, opt Options) http.Handler {
	if c == nil {
		panic("dqweb: nil client")
	}
	if opt.Prefix == "" {
		opt.Prefix = "/"
	}
	if !strings.HasPrefix(opt.Prefix, "/") {
		panic(fmt.Sprintf("dqweb: prefix %q does not start with /", opt.Prefix))
	}
	if !strings.HasSuffix(opt.Prefix, "/") {
		opt.Prefix += "/"
	}
	if opt.QueueListTTL <= 0 {
		opt.QueueListTTL = 30 * time.Second
	}
	if opt.Title == "" {
		opt.Title = "redisq"
	}
	if opt.Timeout <= 0 {
		opt.Timeout = 10 * time.Second
	}
	if opt.Refresh == 0 {
		opt.Refresh = 5 * time.Second
	}
	if opt.FormTimeout <= 0 {
		opt.FormTimeout = 10 * time.Second
	}
	if opt.PayloadBytesPerSecond == 0 {
		opt.PayloadBytesPerSecond = DefaultPayloadBytesPerSecond
	}
	return &handler{c: c, opt: opt, rates: newRates(), names: &queueList{ttl: opt.QueueListTTL},
		hosts: newHostList(opt.AllowedHosts), payloads: make(chan struct{}, MaxPayloadReads),
		budget: newByteBudget(opt.PayloadBytesPerSecond)}
}

type handler struct {
	c        redis.UniversalClient
	opt      Options
	rates    *rates
	names    *queueList
	hosts    hostList
	payloads chan struct{} // a token per payload read under way
	budget   *byteBudget   // payload bytes Redis may copy, per second
	results  results       // the results of recent actions
}

//go:embed static templates
var files embed.FS

// static holds the assets by name, with the version that cache-busts
// their URLs.
var static = func() map[string]asset {
	m := map[string]asset{}
	for name, typ := range map[string]string{"dqweb.css": "text/css; charset=utf-8", "dqweb.js": "text/javascript; charset=utf-8"} {
		b, err := fs.ReadFile(files, "static/"+name)
		if err != nil {
			panic(err)
		}
		sum := sha256.Sum256(b)
		m[name] = asset{b, typ, hex.EncodeToString(sum[:6])}
	}
	return m
}()

type asset struct {
	body    []byte
	typ     string
	version string
}

// csp allows the handler's own stylesheet and script and nothing else: no
// inline script or style, no other origin, no framing, forms only to us.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// First of all, before routing: a Host that may be DNS-rebound.
	if !h.hosts.allows(r.Host) {
		refuseHost(w, r, dashboardAllow)
		return
	}
	hd := w.Header()
	hd.Set("Content-Security-Policy", csp)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Referrer-Policy", "same-origin")
	path, ok := strings.CutPrefix(r.URL.Path, h.opt.Prefix)
	if !ok {
		h.fail(w, r, http.StatusNotFound, "no such page %s", quoted(r.URL.Path))
		return
	}
	if name, ok := strings.CutPrefix(path, "static/"); ok {
		h.serveStatic(w, r, name)
		return
	}
	if path == "action" {
		h.action(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		hd.Set("Allow", "GET, HEAD")
		h.fail(w, r, http.StatusMethodNotAllowed, "%s is not allowed here; actions are POSTed to %saction", r.Method, h.opt.Prefix)
		return
	}
	hd.Set("Cache-Control", "no-store")
	ctx, cancel := context.WithTimeout(r.Context(), h.opt.Timeout)
	defer cancel()
	switch path {
	case "":
		h.overview(ctx, w, r)
	case "queue":
		h.queuePage(ctx, w, r)
	case "item":
		h.itemPage(ctx, w, r)
	case "result":
		h.resultPage(w, r)
	default:
		h.fail(w, r, http.StatusNotFound, "no such page %s", quoted(r.URL.Path))
	}
}

func (h *handler) serveStatic(w http.ResponseWriter, r *http.Request, name string) {
	a, ok := static[name]
	if !ok || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", a.typ)
	w.Header().Set("Cache-Control", "public, max-age=86400")
	_, _ = w.Write(a.body)
}

// layout is what every page's frame needs.
type layout struct {
	Title    string
	Heading  string
	Prefix   string
	ReadOnly bool
	Refresh  int // seconds; 0: no auto-refresh
	CSRF     string
	CSS, JS  string
	Crumbs   []crumb
}

type crumb struct{ Label, URL string }

func (h *handler) layout(w http.ResponseWriter, r *http.Request, heading string, refresh bool) layout {
	l := layout{
		Title:    heading + " · " + h.opt.Title,
		Heading:  heading,
		Prefix:   h.opt.Prefix,
		ReadOnly: h.opt.ReadOnly,
		CSS:      h.opt.Prefix + "static/dqweb.css?v=" + static["dqweb.css"].version,
		JS:       h.opt.Prefix + "static/dqweb.js?v=" + static["dqweb.js"].version,
		Crumbs:   []crumb{{h.opt.Title, h.opt.Prefix}},
	}
	if refresh && h.opt.Refresh > 0 {
		l.Refresh = max(1, int(h.opt.Refresh/time.Second))
	}
	if !h.opt.ReadOnly {
		l.CSRF = h.csrfToken(w, r)
	}
	return l
}

var pages = func() map[string]*template.Template {
	m := map[string]*template.Template{}
	for _, p := range []string{"overview", "queue", "item", "confirm", "result", "error"} {
		m[p] = template.Must(template.New("layout.html").Funcs(funcs).ParseFS(files, "templates/layout.html", "templates/"+p+".html"))
	}
	return m
}()

// render writes page with data; a template error (a bug) becomes a 500.
func (h *handler) render(w http.ResponseWriter, status int, page string, data any) {
	var b strings.Builder
	if err := pages[page].Execute(&b, data); err != nil {
		http.Error(w, "dqweb: rendering "+page+": "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(b.String()))
}

// fail renders an error page; the message is escaped like everything
// else, and cut (see message).
func (h *handler) fail(w http.ResponseWriter, r *http.Request, status int, format string, a ...any) {
	h.render(w, status, "error", struct {
		layout
		Status  int
		Message string
	}{h.layout(w, r, http.StatusText(status), false), status, message(fmt.Sprintf(format, a...))})
}
