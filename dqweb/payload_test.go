package dqweb_test

import (
	"bytes"
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dq-go/delayqueue/dqweb"
	"github.com/dq-go/delayqueue/dqweb/internal/webtest"
	"github.com/redis/go-redis/v9"
)

// sentBytes returns how many bytes Redis has sent to its clients.
func sentBytes(t testing.TB, c *redis.Client) int64 {
	t.Helper()
	info, err := c.Info(context.Background(), "stats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "total_net_output_bytes:"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	t.Fatal("no total_net_output_bytes in INFO")
	return 0
}

// bigItems adds to "orders" a dead item "big" with a 10 MiB payload and
// dead items "mid" (1 MiB of JSON) and "edge" (70 KiB of text).
func bigItems(t testing.TB, f *webtest.Fixture) (big, mid []byte) {
	t.Helper()
	ctx := context.Background()
	big = bytes.Repeat([]byte("B"), 10<<20)
	mid = []byte(`{"rows":[` + strings.Repeat(`{"k":"v"},`, (1<<20)/10-2) + `{"k":"last"}]}`)
	for _, it := range []struct {
		id string
		p  []byte
	}{{"big", big}, {"mid", mid}, {"edge", bytes.Repeat([]byte("e"), 70<<10)}} {
		if err := f.Q.Enqueue(ctx, it.id, it.p, time.Unix(1, 0)); err != nil {
			t.Fatal(err)
		}
		m, err := f.Q.Take(ctx)
		if err != nil || m.ID != it.id {
			t.Fatalf("took %v %v, want %s", m, err, it.id)
		}
		if _, err := m.DeadLetter(ctx, "too big"); err != nil {
			t.Fatal(err)
		}
	}
	return big, mid
}

// TestPayloadReadsAreBounded: whatever the payload's size, a page makes
// Redis send a bounded amount and is itself bounded: a payload over
// ItemPayloadBytes (10 MiB, 1 MiB, 70 KiB) is not read at all, one under
// it is shown whole (indented as JSON), and ?full=1 changes nothing.
func TestPayloadReadsAreBounded(t *testing.T) {
	f := webtest.NewFixture(t, dqweb.Options{})
	_, mid := bigItems(t, f)
	small := `{"rows":[` + strings.Repeat(`{"k":"v"},`, (60<<10)/10-2) + `{"k":"last"}]}`
	if _, err := f.Q.EnqueueAfter(context.Background(), "small", []byte(small), time.Hour); err != nil {
		t.Fatal(err)
	}
	c := client(t)
	// What Redis sends, and the page: 64 KiB of payload, shown as at most
	// 256 KiB of formatted text, which HTML escaping may make longer.
	const sentBound, pageBound = 128 << 10, 1536 << 10
	for _, p := range []struct{ url, says string }{
		{f.ItemURL("orders", "big"), "Not shown: at 10,485,760 bytes"},
		{f.ItemURL("orders", "big") + "&full=1", "dqctl show"},
		{f.ItemURL("orders", "mid"), "Not shown: at 1,048,573 bytes the payload is larger than the 65,536 bytes"},
		{f.ItemURL("orders", "mid") + "&full=1", "dqctl show"},
		{f.ItemURL("orders", "edge"), "Not shown: at 71,680 bytes"},
		{f.ItemURL("orders", "small"), `&#34;k&#34;: &#34;last&#34;`},
		{f.TabURL("orders", "dead"), `data-id="big"`},
	} {
		before := sentBytes(t, f.C)
		r := get(t, c, p.url)
		sent := sentBytes(t, f.C) - before
		if r.status != http.StatusOK || !strings.Contains(r.body, p.says) {
			t.Errorf("%s: %d, want 200 with %q\n%.3000s", p.url, r.status, p.says, r.body)
		}
		if sent > sentBound || len(r.body) > pageBound {
			t.Errorf("%s: Redis sent %d bytes, page of %d bytes; want under %d and %d", p.url, sent, len(r.body), sentBound, pageBound)
		}
	}
	// A payload under ItemPayloadBytes is shown whole, as indented JSON.
	r := get(t, c, f.ItemURL("orders", "small"))
	if !strings.Contains(r.body, "{\n  &#34;rows&#34;: [\n    {\n      &#34;k&#34;: &#34;v&#34;\n    },") || strings.Contains(r.body, `id="cut"`) {
		t.Errorf("the JSON payload is not shown whole, indented:\n%.500s", r.body)
	}
	if r := get(t, c, f.ItemURL("orders", "mid")); len(mid) <= dqweb.ItemPayloadBytes || strings.Contains(r.body, "&#34;k&#34;") {
		t.Errorf("the item page shows some of a %d byte payload", len(mid))
	}
}

// TestPayloadReadsAreLimited: 20 concurrent views of an item run at most
// MaxPayloadReads payload reads at once (a hook counts the commands that
// name the item, and holds each for a while so that they overlap).
func TestPayloadReadsAreLimited(t *testing.T) {
	f := webtest.NewFixture(t, dqweb.Options{})
	bigItems(t, f)
	hooked := redis.NewClient(f.C.Options())
	t.Cleanup(func() { _ = hooked.Close() })
	var mu sync.Mutex
	var now, most, total int
	hooked.AddHook(itemHook{id: "mid", enter: func() {
		mu.Lock()
		now++
		total++
		most = max(most, now)
		mu.Unlock()
		time.Sleep(20 * time.Millisecond)
	}, leave: func() {
		mu.Lock()
		now--
		mu.Unlock()
	}})
	base := serve(t, hooked, dqweb.Options{Timeout: time.Minute})
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			c := client(t)
			req, _ := http.NewRequest(http.MethodGet, base+"item?q=orders&id=mid", nil)
			resp, err := c.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Errorf("view: %d", resp.StatusCode)
			}
		})
	}
	wg.Wait()
	// (A script's first run may take two commands, EVALSHA then EVAL.)
	if total < 20 || most > dqweb.MaxPayloadReads {
		t.Fatalf("%d reads of the item, at most %d at once; want 20 or more, at most %d at once", total, most, dqweb.MaxPayloadReads)
	}
}

// itemHook calls enter and leave around every command that names id.
type itemHook struct {
	id           string
	enter, leave func()
}

func (itemHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h itemHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		for _, a := range cmd.Args() {
			if s, ok := a.(string); ok && s == h.id {
				h.enter()
				defer h.leave()
				break
			}
		}
		return next(ctx, cmd)
	}
}

func (itemHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestPayloadPreviewsAreBounded: the dead list previews payloads up to
// 64 KiB only, so a page of large dead items costs Redis little.
func TestPayloadPreviewsAreBounded(t *testing.T) {
	f := webtest.NewFixture(t, dqweb.Options{})
	bigItems(t, f)
	ctx := context.Background()
	for i := range 15 {
		_ = f.Q.Enqueue(ctx, "m"+strconv.Itoa(i), bytes.Repeat([]byte("m"), 1<<20), time.Unix(1, 0))
	}
	ms, err := f.Q.TakeBatch(ctx, 15)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if _, err := m.DeadLetter(ctx, "big"); err != nil {
			t.Fatal(err)
		}
	}
	before := sentBytes(t, f.C)
	r := get(t, client(t), f.TabURL("orders", "dead"))
	sent := sentBytes(t, f.C) - before
	if r.status != http.StatusOK || sent > 256<<10 {
		t.Fatalf("queue page with 18 dead items of 70 KiB to 10 MiB: %d, Redis sent %d bytes", r.status, sent)
	}
	if st, _ := f.Q.Stats(ctx); st.Dead != 21 {
		t.Fatalf("%d dead", st.Dead)
	}
	// Every dead item of the page is listed, the large ones without a
	// preview but with a link to their page.
	if n := strings.Count(r.body, `<article class="deaditem"`); n != 20 {
		t.Errorf("%d dead items listed, want a page of 20", n)
	}
	if !strings.Contains(r.body, "payload of 1,048,576 bytes: <a class=\"showall\"") {
		t.Errorf("a 1 MiB dead payload is not offered on its page")
	}
}

// TestLargePayloadViewsCostRedisLittle (issue 24, item 13): the item page
// of a 1 MiB payload had Redis copy it whole to cut its first 64 KiB,
// 0.9 to 1.5 ms of Redis' main thread a view. Now a payload over
// ItemPayloadBytes is not read at all: its views cost Redis what those of
// a small payload do (INFO commandstats, compared with a slack for a
// loaded machine).
func TestLargePayloadViewsCostRedisLittle(t *testing.T) {
	f := webtest.NewFixture(t, dqweb.Options{})
	bigItems(t, f)
	c := client(t)
	cost := func(id string) int64 {
		get(t, c, f.ItemURL("orders", id)) // loads the scripts
		before := redisUsec(t, f.C)
		for range 30 {
			if r := get(t, c, f.ItemURL("orders", id)); r.status != http.StatusOK {
				t.Fatalf("%s: %d", id, r.status)
			}
		}
		return redisUsec(t, f.C) - before
	}
	small, mid := cost("mail:7"), cost("mid")
	if mid > 3*small+5000 {
		t.Fatalf("30 views of a 1 MiB payload cost Redis %d µs, of a small one %d µs: the large payload is read", mid, small)
	}
}

// TestPayloadBudgetIsShared (issue 24, item 13): 20 viewers looping on
// item pages kept Redis busy 10.4 s of 15 s. Now the payload bytes read
// per second, across all requests, are bounded by
// Options.PayloadBytesPerSecond: looping viewers together read at most
// the budget (and the one second's worth the bucket starts with); past
// it, the item page and the dead list show the payload by size and say
// why.
func TestPayloadBudgetIsShared(t *testing.T) {
	f := webtest.NewFixture(t, dqweb.Options{})
	ctx := context.Background()
	load := bytes.Repeat([]byte("p"), 60<<10)
	load = append(load, "end-of-load"...)
	if _, err := f.Q.EnqueueAfter(ctx, "p60", load, time.Hour); err != nil {
		t.Fatal(err)
	}
	const budget = 256 << 10
	base := serve(t, f.C, dqweb.Options{PayloadBytesPerSecond: budget})
	var mu sync.Mutex
	shown, busy := 0, 0
	start := time.Now()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			c := client(t)
			for time.Since(start) < time.Second {
				r := get(t, c, base+"item?q=orders&id=p60")
				mu.Lock()
				switch {
				case r.status == http.StatusOK && strings.Contains(r.body, "end-of-load"):
					shown++
				case r.status == http.StatusOK && strings.Contains(r.body, "Not shown now: the dashboard has read as much payload from Redis as it may"):
					busy++
				default:
					t.Errorf("view: %d\n%.2000s", r.status, r.body)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	// At most a second's worth at the start, then the rate.
	most := int((budget + elapsed.Seconds()*budget) / float64(len(load)))
	if shown == 0 || shown > most || busy == 0 {
		t.Fatalf("8 viewers looping for %v on a %d byte payload, budget %d bytes a second: %d views showed it, %d said the budget was spent; want 1 to %d, and some",
			elapsed, len(load), budget, shown, busy, most)
	}
	// With a budget of 1 byte a second, the bucket's first 64 KiB pay for
	// one view; then the item page and the dead list say why they show
	// the payload by size.
	if err := f.Q.Enqueue(ctx, "d60", load, time.Unix(1, 0)); err != nil {
		t.Fatal(err)
	}
	m, err := f.Q.Take(ctx)
	if err != nil || m.ID != "d60" {
		t.Fatalf("took %v %v", m, err)
	}
	if _, err := m.DeadLetter(ctx, "too big"); err != nil {
		t.Fatal(err)
	}
	base = serve(t, f.C, dqweb.Options{PayloadBytesPerSecond: 1})
	c := client(t)
	if r := get(t, c, base+"item?q=orders&id=p60"); r.status != http.StatusOK || !strings.Contains(r.body, "end-of-load") {
		t.Fatalf("first view: %d, want the payload\n%.2000s", r.status, r.body)
	}
	if r := get(t, c, base+"item?q=orders&id=p60"); r.status != http.StatusOK || !strings.Contains(r.body, "Not shown now") || !strings.Contains(r.body, "(1 byte a second across all its pages") {
		t.Fatalf("second view: %d, want the payload by size, saying why\n%.2000s", r.status, r.body)
	}
	r := get(t, c, base+"queue?q=orders&state=dead")
	if r.status != http.StatusOK || !strings.Contains(r.body, "payload of 61,451 bytes, not read now (the dashboard's budget of payload reads from Redis is spent for the moment)") {
		t.Fatalf("dead list with the budget spent: %d\n%s", r.status, r.body)
	}
}
