package dqweb_test

import (
	"bufio"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/dq-go/delayqueue/dqweb"
	"github.com/dq-go/delayqueue/dqweb/internal/webtest"
)

// TestSlowFormIsCut: an action whose body trickles in is answered 408
// once Options.FormTimeout has passed, on a server without timeouts of
// its own; an oversized form is a 413.
func TestSlowFormIsCut(t *testing.T) {
	f := webtest.NewFixture(t, dqweb.Options{FormTimeout: 500 * time.Millisecond})
	u, _ := url.Parse(f.Base)
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, err = conn.Write([]byte("POST /dq/action HTTP/1.1\r\nHost: " + u.Host + "\r\n" +
		"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 1000\r\n\r\nop=purge&q="))
	if err != nil {
		t.Fatal(err)
	}
	// The rest of the body never comes. A generous deadline: the answer
	// is due after 0.5s, and without the fix never comes.
	start := time.Now()
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a stalled form after %v: %v", time.Since(start).Round(time.Millisecond), err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout || time.Since(start) < 400*time.Millisecond {
		t.Fatalf("stalled form: %d after %v, want 408 after 0.5s", resp.StatusCode, time.Since(start))
	}

	big := url.Values{"op": {"purge"}, "q": {strings.Repeat("q", 70<<10)}}
	if r := post(t, client(t), f.Base+"action", big); r.status != http.StatusRequestEntityTooLarge {
		t.Errorf("a 70 KiB form: %d, want 413", r.status)
	}
}
