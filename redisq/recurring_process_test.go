package redisq

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// recurringChaosDuration is how long TestRecurringExactlyOnceAcrossKilledProcesses
// kills and restarts its processes: 20s, 8s with -short, the 2
// minutes with REDISQ_LONG=1, or REDISQ_RECURRING_DURATION (a Go
// duration).
func recurringChaosDuration() time.Duration {
	if v := os.Getenv("REDISQ_RECURRING_DURATION"); v != "" {
		if d, err := time.ParseDuration(v); err == nil {
			return d
		}
	}
	switch {
	case os.Getenv("REDISQ_LONG") == "1":
		return 2 * time.Minute
	case testing.Short():
		return 8 * time.Second
	}
	return 20 * time.Second
}

// TestRecurringHelperProcess is the process that the chaos test starts and
// kills: it registers the job, as every instance of a service would at
// start, prints READY after its keeper's first pass, and keeps the
// registrations until it is killed.
func TestRecurringHelperProcess(t *testing.T) {
	if os.Getenv("REDISQ_REC_HELPER") != "1" {
		t.Skip("the helper process of TestRecurringExactlyOnceAcrossKilledProcesses")
	}
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: os.Getenv("REDISQ_ADDR")})
	q, err := New(ctx, c, os.Getenv("REDISQ_QUEUE"))
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(2)
	}
	for name, s := range chaosRegs {
		out, err := q.Register(ctx, name, s, []byte(name))
		if err != nil {
			fmt.Println("ERR", err)
			os.Exit(2)
		}
		fmt.Println("REGISTERED", name, out)
	}
	var once sync.Once
	keeperHook = func(*Queue) { once.Do(func() { fmt.Println("READY") }) }
	fmt.Println("ERR", q.KeepRecurring(ctx))
	os.Exit(2)
}

// chaosRegs are the registrations of the chaos test: every second, and
// every second with a jitter (each occurrence due up to 800 ms after it).
var chaosRegs = map[string]Schedule{
	"tick":   Every(time.Second),
	"jitter": Jitter(Every(time.Second), 800*time.Millisecond),
}

// life is one run of a helper process: from its start to its death, and
// from its keeper's first pass (ready; zero if it never got there).
type life struct {
	start, ready, end time.Time
}

// chaosHelper is one of the five processes, started again after each kill.
type chaosHelper struct {
	t     *testing.T
	env   []string
	mu    sync.Mutex
	cmd   *exec.Cmd
	lives []*life
	exits chan struct{} // closed when the current process's output ended
}

func (h *chaosHelper) alive() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cmd != nil
}

func (h *chaosHelper) start() {
	h.mu.Lock()
	defer h.mu.Unlock()
	cmd := exec.Command(os.Args[0], "-test.run=^TestRecurringHelperProcess$")
	cmd.Env = append(append(os.Environ(), "REDISQ_REC_HELPER=1"), h.env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	require.NoError(h.t, err)
	l := &life{start: time.Now()}
	require.NoError(h.t, cmd.Start())
	h.cmd, h.lives = cmd, append(h.lives, l)
	exits := make(chan struct{})
	h.exits = exits
	go func() {
		defer close(exits)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			switch line := sc.Text(); {
			case line == "READY":
				h.mu.Lock()
				l.ready = time.Now()
				h.mu.Unlock()
			case len(line) >= 3 && line[:3] == "ERR":
				h.t.Logf("helper: %s", line)
			}
		}
	}()
}

// kill SIGKILLs the process and records its end.
func (h *chaosHelper) kill() {
	h.mu.Lock()
	cmd, exits := h.cmd, h.exits
	h.cmd = nil
	h.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-exits
	_ = cmd.Wait()
	h.mu.Lock()
	h.lives[len(h.lives)-1].end = time.Now()
	h.mu.Unlock()
}

// Five processes register the same jobs (every second, and every second
// with a jitter) and keep them, killed
// with SIGKILL and started again at random, now and then all of them at
// once for a few seconds. From the ledger of what a consumer took: every
// occurrence was enqueued exactly once, none is missing while a process
// was up, and the occurrences that came while all were down are coalesced
// (none of them was enqueued: the one enqueued before stands for them).
func TestRecurringExactlyOnceAcrossKilledProcesses(t *testing.T) {
	dur := recurringChaosDuration()
	s := startRedis(t)
	c := s.client(t)
	q := newQueue(t, c, "chaos")
	ctx := context.Background()

	// The consumer: never killed, so every item is taken once.
	var mu sync.Mutex
	var ledger []taken
	enqueued := map[string]time.Time{}
	cctx, stopConsumer := context.WithCancel(ctx)
	consumed := make(chan struct{})
	go func() {
		defer close(consumed)
		for {
			m, err := q.Take(cctx)
			if err != nil {
				if cctx.Err() == nil {
					t.Errorf("Take: %v", err)
				}
				return
			}
			it, err := q.Get(ctx, m.ID) // when it was enqueued, for the report
			if err != nil {
				t.Errorf("Get: %v", err)
			}
			if err := m.Ack(ctx); err != nil {
				t.Errorf("Ack: %v", err)
			}
			_, at, ok := Occurrence(m.ID)
			if !ok {
				t.Errorf("not an occurrence: %q", m.ID)
			}
			mu.Lock()
			ledger = append(ledger, taken{m.ID, at, m.Due, m.ClaimedAt, m.Attempts})
			enqueued[m.ID] = it.Enqueued
			mu.Unlock()
		}
	}()
	defer func() { stopConsumer(); <-consumed }()

	helpers := make([]*chaosHelper, 5)
	for i := range helpers {
		helpers[i] = &chaosHelper{t: t, env: []string{"REDISQ_ADDR=" + s.addr(), "REDISQ_QUEUE=chaos"}}
		helpers[i].start()
		defer helpers[i].kill()
	}
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 18))
	begin := time.Now()
	end := begin.Add(dur)
	kills, starts, blackouts := 0, 0, 0
	lastBlackout := begin
	for time.Now().Before(end) {
		time.Sleep(time.Duration(100+r.IntN(1400)) * time.Millisecond)
		// All down for 2.5 to 4 seconds: once in every run, and then now
		// and then.
		blackout := blackouts == 0 && time.Since(begin) > dur*2/5 || time.Since(lastBlackout) > 8*time.Second && r.IntN(4) == 0
		if blackout && (blackouts == 0 || time.Until(end) > 4*time.Second) {
			for _, h := range helpers {
				if h.alive() {
					h.kill()
					kills++
				}
			}
			blackouts++
			time.Sleep(time.Duration(2500+r.IntN(1500)) * time.Millisecond)
			for _, i := range r.Perm(len(helpers))[:1+r.IntN(2)] {
				helpers[i].start()
				starts++
			}
			lastBlackout = time.Now()
			continue
		}
		h := helpers[r.IntN(len(helpers))]
		if h.alive() {
			h.kill()
			kills++
		} else {
			h.start()
			starts++
		}
	}
	for _, h := range helpers {
		h.kill()
	}
	stopped := time.Now()

	// Let the consumer take what is due: the occurrence enqueued last is
	// due within a second of the last keeper's death (and its jitter).
	regs, err := q.Registrations(ctx)
	require.NoError(t, err)
	require.Len(t, regs, len(chaosRegs))
	last := map[string]time.Time{}
	for _, r := range regs {
		last[r.Name] = r.Enqueued
		require.False(t, r.Enqueued.After(stopped.Add(1100*time.Millisecond)), "the watermark %v of %s is one period ahead at most", r.Enqueued, r.Name)
	}
	eventually(t, 30*time.Second, "the consumer takes the last occurrences", func() bool {
		mu.Lock()
		defer mu.Unlock()
		got := map[string]bool{}
		for _, x := range ledger {
			name, _, _ := Occurrence(x.id)
			got[name] = got[name] || !x.at.Before(last[name])
		}
		return len(got) == len(chaosRegs) && got["tick"] && got["jitter"]
	})
	stopConsumer()
	<-consumed

	// Exactly once: each occurrence taken once (the consumer never died:
	// a second take of an id would be a second enqueue), each due at its
	// time, on the second, never early, and everything enqueued was taken.
	mu.Lock()
	defer mu.Unlock()
	seen := map[string]map[int64]bool{}
	for name := range chaosRegs {
		seen[name] = map[int64]bool{}
	}
	var maxLate, maxWait time.Duration
	lateEnqueues := 0
	for _, x := range ledger {
		if e := enqueued[x.id]; e.After(x.due) {
			lateEnqueues++
			maxWait = max(maxWait, x.claimed.Sub(e))
		} else {
			maxWait = max(maxWait, x.claimed.Sub(x.due))
		}
		ms := x.at.UnixMilli()
		name, _, _ := Occurrence(x.id)
		require.False(t, seen[name][ms], "occurrence %v of %s enqueued twice", x.at, name)
		seen[name][ms] = true
		require.Equal(t, int64(0), ms%1000, x.id)
		// Due at the occurrence, or its jitter's offset later.
		due := msTime(occurrenceDue(chaosRegs[name], name, ms))
		require.True(t, x.due.Equal(due), "%s due %v, want %v", x.id, x.due, due)
		require.True(t, !due.Before(x.at) && due.Before(x.at.Add(800*time.Millisecond)), x.id)
		require.False(t, x.claimed.Before(x.due), x.id)
		require.Equal(t, 1, x.attempts, x.id)
		maxLate = max(maxLate, x.claimed.Sub(x.due))
	}
	st, err := q.Stats(ctx)
	require.NoError(t, err)
	require.EqualValues(t, len(ledger), st.Enqueued, "every occurrence enqueued was taken once")
	require.Empty(t, scheduledOf(t, q, ""))

	// None missing while a process was up: an occurrence o is required
	// when some process had made its first pass by o-1s (when the
	// occurrence before o fell due) and lived until o.
	var lives []life
	for _, h := range helpers {
		for _, l := range h.lives {
			lives = append(lives, *l)
		}
	}
	required, missing := 0, []string{}
	for name := range chaosRegs {
		var first time.Time
		for _, x := range ledger {
			if n, _, _ := Occurrence(x.id); n == name && (first.IsZero() || x.at.Before(first)) {
				first = x.at
			}
		}
		for o := first.Add(time.Second); !o.After(last[name]); o = o.Add(time.Second) {
			up := false
			for _, l := range lives {
				if !l.ready.IsZero() && !l.ready.After(o.Add(-time.Second)) && !l.end.Before(o) {
					up = true
					break
				}
			}
			if up {
				required++
				if !seen[name][o.UnixMilli()] {
					missing = append(missing, OccurrenceID(name, o))
				}
			}
		}
	}
	require.Empty(t, missing, "occurrences missing while a process was up")

	// Coalesced while all were down: when the last process died at d, the
	// watermark was at most d+1s; no occurrence after it and up to the
	// start of the next process was enqueued.
	type span struct{ from, to time.Time }
	var alive []span
	for _, l := range lives {
		alive = append(alive, span{l.start, l.end})
	}
	slices.SortFunc(alive, func(a, b span) int { return a.from.Compare(b.from) })
	gaps := 0
	for i, reach := 0, alive[0].to; i+1 < len(alive); i++ {
		reach = maxTime(reach, alive[i].to)
		next := alive[i+1].from
		if !next.After(reach) {
			continue
		}
		from, to := reach.Add(time.Second+100*time.Millisecond), next.Add(-100*time.Millisecond)
		for o := from.Truncate(time.Second).Add(time.Second); o.Before(to); o = o.Add(time.Second) {
			gaps++
			for name := range chaosRegs {
				require.False(t, seen[name][o.UnixMilli()], "occurrence %v of %s enqueued while every process was down (%v to %v)", o, name, reach, next)
			}
		}
	}
	t.Logf("%v: %d kills, %d starts, %d blackouts; %d occurrences taken once each, %d of them required, %d coalesced while all were down; "+
		"max lateness %v; %d enqueued after their time; max claim - max(due, enqueued) %v",
		dur, kills, starts, blackouts, len(ledger), required, gaps, maxLate, lateEnqueues, maxWait)
	require.Positive(t, required)
	require.Positive(t, gaps, "a blackout long enough to coalesce an occurrence")
	audit(t, q)
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
