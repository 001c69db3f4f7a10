package dqweb

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
)

// BasicAuth wraps h so that it serves only requests that carry user and
// password by HTTP basic authentication, answering 401 to the rest. The
// password travels in every request: serve it over TLS, or on loopback.
func BasicAuth(h http.Handler, user, password string) http.Handler {
	wantU, wantP := sha256.Sum256([]byte(user)), sha256.Sum256([]byte(password))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		gotU, gotP := sha256.Sum256([]byte(u)), sha256.Sum256([]byte(p))
		// Compare hashes in constant time: neither length nor content leaks.
		if !ok || subtle.ConstantTimeCompare(gotU[:], wantU[:])&subtle.ConstantTimeCompare(gotP[:], wantP[:]) != 1 {
			w.Header().Set("WWW-Authenticate", `Basic realm="dqweb", charset="UTF-8"`)
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}
