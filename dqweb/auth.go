package dqweb

import (
	"container/list"
	"crypto/sha256"
	"crypto/subtle"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"
)

// BasicAuth wraps h so that it serves only requests that carry user and
// password by HTTP basic authentication, answering 401 to the rest, with
// the defaults of AuthOptions. The password travels in every request:
// serve it over TLS, or on loopback. See BasicAuthWith for how guessing
// is bounded.
func BasicAuth(h http.Handler, user, password string) http.Handler {
	return BasicAuthWith(h, user, password, AuthOptions{})
}

// AuthOptions tunes BasicAuthWith. The zero value is the default.
type AuthOptions struct {
	// MaxFailures is how many wrong user:password pairs one client may
	// send in Window before it is refused; default 10. Requests without
	// credentials (a browser's first request, before it asks) do not
	// count.
	MaxFailures int
	// Window is the span failures are counted over, and how long a client
	// that reached MaxFailures is refused, from its first failure; default
	// 1 minute.
	Window time.Duration
	// FailuresPerSecond bounds the wrong pairs all clients together may
	// send, in a bucket of 10 seconds' worth; default 5. A client that
	// logged in before is not held back by it (see BasicAuthWith).
	FailuresPerSecond float64
	// Logger receives failed logins; default slog.Default(). At most two
	// lines per client per Window (its first failure, and when it is
	// refused), one when the bound of all clients is reached, and 30 lines
	// a minute in all, then a count of the lines left out.
	Logger *slog.Logger
}

// BasicAuthWith is BasicAuth with rate limiting and logging tuned by opt.
//
// Credentials are compared in constant time (as SHA-256 digests, so
// neither their length nor their content leaks through timing). A client
// is the request's remote IP address (its /64 for IPv6), so behind a
// reverse proxy every client counts as the proxy: an attacker then locks
// everyone out for Window, not in.
//
// Guessing is bounded three ways, each before the credentials are
// checked, so that a refused guess learns nothing (a check made anyway
// would tell a right guess from a wrong one, unbounded):
//   - a client that sent MaxFailures wrong pairs within Window is answered
//     429 Too Many Requests with Retry-After, its credentials unchecked,
//     until Window has passed since its first failure; a correct pair
//     before that clears its count;
//   - the /64s of one IPv6 /48 together get 4 × MaxFailures per Window,
//     then the /48 is refused likewise;
//   - all clients together get FailuresPerSecond, with a burst of 10
//     seconds' worth; past it, 429 with Retry-After: 1 or so, unchecked.
//
// Each check takes its share of these budgets before the comparison and
// a correct pair gives it back, so concurrent guesses are bounded too.
// Clients that logged in in the last 30 days (the last 1,000 of them) are
// still bounded by their own count but not by their /48's nor by the
// bound of all clients: an attacker spending those from rotating
// addresses does not lock out an operator who has logged in before from
// that address. An operator on an address never seen may wait for the
// bound of all clients while such an attack lasts. At most 10,000 clients
// and /48s are tracked: when full, the oldest count is forgotten (that
// client may guess again, within the bound of all clients, which also
// bounds how fast the table fills: 50 + 5 a second by default).
func BasicAuthWith(h http.Handler, user, password string, opt AuthOptions) http.Handler {
	return basicAuth(h, user, password, opt, time.Now)
}

func basicAuth(h http.Handler, user, password string, opt AuthOptions, now func() time.Time) *authHandler {
	if opt.MaxFailures <= 0 {
		opt.MaxFailures = 10
	}
	if opt.Window <= 0 {
		opt.Window = time.Minute
	}
	if opt.FailuresPerSecond <= 0 {
		opt.FailuresPerSecond = 5
	}
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	lim := &authLimiter{opt: opt, now: now, clients: map[netip.Prefix]*list.Element{}, known: map[netip.Prefix]*list.Element{},
		order: list.New(), knownOrder: list.New(), burst: 10 * opt.FailuresPerSecond}
	lim.tokens, lim.filled = lim.burst, now()
	return &authHandler{h: h, lim: lim, wantU: sha256.Sum256([]byte(user)), wantP: sha256.Sum256([]byte(password))}
}

type authHandler struct {
	h            http.Handler
	lim          *authLimiter
	wantU, wantP [sha256.Size]byte
}

func (a *authHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	client := clientOf(r)
	u, p, ok := r.BasicAuth()
	t, wait, why := a.lim.begin(client, ok)
	if wait > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int((wait+time.Second-1)/time.Second)))
		http.Error(w, why, http.StatusTooManyRequests)
		return
	}
	gotU, gotP := sha256.Sum256([]byte(u)), sha256.Sum256([]byte(p))
	// Compare hashes in constant time: neither length nor content leaks.
	right := ok && subtle.ConstantTimeCompare(gotU[:], a.wantU[:])&subtle.ConstantTimeCompare(gotP[:], a.wantP[:]) == 1
	if ok {
		a.lim.end(t, right, r)
	}
	if !right {
		w.Header().Set("WWW-Authenticate", `Basic realm="dqweb", charset="UTF-8"`)
		http.Error(w, "authentication required", http.StatusUnauthorized)
		return
	}
	a.h.ServeHTTP(w, r)
}

// clientOf is the address failures are counted by: the remote IP, or its
// /64 for IPv6 (one host often has a whole /64).
func clientOf(r *http.Request) netip.Prefix {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Prefix{} // unknown: all such requests share one count
	}
	a = a.Unmap().WithZone("")
	bits := 32
	if a.Is6() {
		bits = 64
	}
	p, _ := a.Prefix(bits)
	return p
}

// siteOf is the IPv6 /48 of client, whose /64s share a bound; not ok for
// IPv4 and unknown clients.
func siteOf(client netip.Prefix) (netip.Prefix, bool) {
	if !client.IsValid() || !client.Addr().Is6() {
		return netip.Prefix{}, false
	}
	p, _ := client.Addr().Prefix(48)
	return p, true
}

const (
	maxAuthClients = 10_000
	maxKnown       = 1_000
	knownFor       = 30 * 24 * time.Hour
	siteFactor     = 4 // a /48's failures per Window, in MaxFailures
)

// failures is one client's (or /48's) failed logins in its current
// window; checks under way count as failures until they end.
type failures struct {
	key    netip.Prefix
	start  time.Time // first failure of the window
	n      int
	logged bool // its first failure was logged
}

// knownClient is a client that logged in.
type knownClient struct {
	key netip.Prefix
	at  time.Time // its last login
}

// ticket is what a check took of the budgets, to keep or give back.
type ticket struct {
	client, site netip.Prefix
	hasSite      bool
	token        bool // took a token of the bound of all clients
}

// authLimiter counts failures per client. Safe for concurrent use.
type authLimiter struct {
	opt   AuthOptions
	now   func() time.Time
	burst float64

	mu sync.Mutex
	// guarded by mu: the counts of clients and /48s, oldest window first
	clients map[netip.Prefix]*list.Element
	order   *list.List // of *failures
	// guarded by mu: the clients that logged in, the least recent first
	known      map[netip.Prefix]*list.Element
	knownOrder *list.List // of *knownClient
	// guarded by mu: the bound of all clients, a token bucket
	tokens    float64
	filled    time.Time
	dryLogged time.Time // when running out of tokens was last logged
	// guarded by mu: the log budget of the current minute
	logStart   time.Time
	logLines   int
	logDropped int
}

// begin decides whether a request from client may have its credentials
// checked (guess: it has some), and if so takes their share of the
// budgets; it returns how long the client is still refused, or 0, and
// why.
func (l *authLimiter) begin(client netip.Prefix, guess bool) (ticket, time.Duration, string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	t := ticket{client: client}
	if wait := l.refusedLocked(client, l.opt.MaxFailures, now); wait > 0 {
		return t, wait, "too many failed logins from your address; try again later"
	}
	known := l.knownLocked(client, now)
	t.site, t.hasSite = siteOf(client)
	t.hasSite = t.hasSite && !known
	if t.hasSite {
		if wait := l.refusedLocked(t.site, siteFactor*l.opt.MaxFailures, now); wait > 0 {
			return t, wait, "too many failed logins from your network (IPv6 /48); try again later"
		}
	}
	if !guess {
		return t, 0, ""
	}
	l.refillLocked(now)
	if l.tokens < 1 && !known {
		if now.Sub(l.dryLogged) >= l.opt.Window {
			l.dryLogged = now
			l.logLocked(now, "dqweb: refusing new clients: too many failed basic auth from all addresses",
				"per_second", l.opt.FailuresPerSecond)
		}
		return t, max(time.Second, time.Duration((1-l.tokens)/l.opt.FailuresPerSecond*float64(time.Second))),
			"too many failed logins from many addresses; try again in a moment"
	}
	if l.tokens >= 1 {
		l.tokens--
		t.token = true
	}
	l.countLocked(client, now).n++
	if t.hasSite {
		l.countLocked(t.site, now).n++
	}
	return t, 0, ""
}

// end settles what begin took: a right pair gives it back, clears the
// client's count and makes it known; a wrong one keeps it, and is logged.
func (l *authLimiter) end(t ticket, right bool, r *http.Request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if right {
		if t.token {
			l.tokens = min(l.burst, l.tokens+1)
		}
		if e := l.clients[t.client]; e != nil {
			l.order.Remove(e)
			delete(l.clients, t.client)
		}
		if e := l.clients[t.site]; t.hasSite && e != nil && e.Value.(*failures).n > 0 {
			e.Value.(*failures).n--
		}
		l.rememberLocked(t.client, now)
		return
	}
	e := l.clients[t.client]
	if e == nil {
		return // forgotten meanwhile
	}
	f := e.Value.(*failures)
	switch {
	case !f.logged:
		f.logged = true
		l.logLocked(now, "dqweb: failed basic auth", "client", t.client.String(), "remote", r.RemoteAddr, "path", shown(r.URL.Path))
	case f.n == l.opt.MaxFailures:
		l.logLocked(now, "dqweb: refusing a client after failed basic auth", "client", t.client.String(),
			"failures", f.n, "for", f.start.Add(l.opt.Window).Sub(now).Round(time.Second).String())
	}
}

// refusedLocked returns how long key, allowed most failures per Window,
// is still refused, or 0.
func (l *authLimiter) refusedLocked(key netip.Prefix, most int, now time.Time) time.Duration {
	e := l.clients[key]
	if e == nil {
		return 0
	}
	f := e.Value.(*failures)
	left := f.start.Add(l.opt.Window).Sub(now)
	if f.n < most || left <= 0 {
		return 0
	}
	return left
}

// countLocked returns key's count in its current window, starting one
// (and forgetting the oldest when the table is full) if needed.
func (l *authLimiter) countLocked(key netip.Prefix, now time.Time) *failures {
	if e := l.clients[key]; e != nil {
		f := e.Value.(*failures)
		if now.Sub(f.start) >= l.opt.Window {
			*f = failures{key: key, start: now}
			l.order.MoveToBack(e)
		}
		return f
	}
	// Forget the counts whose window ended, and the oldest when full.
	for e := l.order.Front(); e != nil; e = l.order.Front() {
		f := e.Value.(*failures)
		if now.Sub(f.start) < l.opt.Window && l.order.Len() < maxAuthClients {
			break
		}
		l.order.Remove(e)
		delete(l.clients, f.key)
	}
	f := &failures{key: key, start: now}
	l.clients[key] = l.order.PushBack(f)
	return f
}

// knownLocked reports whether client logged in within knownFor.
func (l *authLimiter) knownLocked(client netip.Prefix, now time.Time) bool {
	e := l.known[client]
	return e != nil && now.Sub(e.Value.(*knownClient).at) < knownFor
}

// rememberLocked records client's login, forgetting the least recent
// when maxKnown are known.
func (l *authLimiter) rememberLocked(client netip.Prefix, now time.Time) {
	if e := l.known[client]; e != nil {
		e.Value.(*knownClient).at = now
		l.knownOrder.MoveToBack(e)
		return
	}
	if l.knownOrder.Len() >= maxKnown {
		e := l.knownOrder.Front()
		l.knownOrder.Remove(e)
		delete(l.known, e.Value.(*knownClient).key)
	}
	l.known[client] = l.knownOrder.PushBack(&knownClient{key: client, at: now})
}

// refillLocked adds the tokens earned since the last refill.
func (l *authLimiter) refillLocked(now time.Time) {
	if d := now.Sub(l.filled); d > 0 {
		l.tokens = min(l.burst, l.tokens+d.Seconds()*l.opt.FailuresPerSecond)
	}
	l.filled = now
}

// tracked is how many clients and /48s have a count.
func (l *authLimiter) tracked() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.clients)
}

// logLocked logs msg within the budget of 30 lines a minute.
func (l *authLimiter) logLocked(now time.Time, msg string, args ...any) {
	if now.Sub(l.logStart) >= time.Minute {
		if l.logDropped > 0 {
			l.opt.Logger.Warn("dqweb: failed basic auth lines left out", "lines", l.logDropped, "since", l.logStart.UTC().Format(time.RFC3339))
		}
		l.logStart, l.logLines, l.logDropped = now, 0, 0
	}
	if l.logLines >= 30 {
		l.logDropped++
		return
	}
	l.logLines++
	l.opt.Logger.Warn(msg, args...)
}
