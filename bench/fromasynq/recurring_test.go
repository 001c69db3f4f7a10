package fromasynq

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dq-go/delayqueue/redisq"
	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
)

// TestFromAsynqScheduler: asynq's Scheduler.Register(cronspec, task) is
// redisq's JobKind[T].Register(ctx, q, name, schedule, value): typed, each
// occurrence decoded by the kind's handler (Queue.Register with a payload
// warns of one that a typed handler of its kind in the process cannot
// decode). An
// asynq Scheduler enqueues every occurrence itself, so two processes
// running one enqueue each occurrence twice; redisq keeps the registration
// in Redis and any number of processes enqueue each occurrence once.
// Unregister removes it in both; Inspector.SchedulerEntries is
// Registrations.
func TestFromAsynqScheduler(t *testing.T) {
	r := newRig(t)
	var mu sync.Mutex
	enqueued := map[string][]time.Time{} // by scheduler
	handled := 0
	done := make(chan struct{})

	r.asynqServer(asynq.HandlerFunc(func(context.Context, *asynq.Task) error {
		mu.Lock()
		handled++
		mu.Unlock()
		return nil
	}), nil)
	var schedulers []*asynq.Scheduler
	for _, name := range []string{"A", "B"} {
		s := asynq.NewSchedulerFromRedisClient(r.rc, &asynq.SchedulerOpts{
			LogLevel:          asynq.FatalLevel,
			HeartbeatInterval: 100 * time.Millisecond,
			PostEnqueueFunc: func(info *asynq.TaskInfo, err error) {
				if err != nil {
					t.Errorf("asynq scheduler %s: %v", name, err)
					return
				}
				mu.Lock()
				enqueued[name] = append(enqueued[name], time.Now().Truncate(time.Second))
				if len(enqueued["A"]) >= 2 && len(enqueued["B"]) >= 2 && done != nil {
					close(done)
					done = nil
				}
				mu.Unlock()
			},
		})
		if _, err := s.Register("@every 1s", asynq.NewTask("digest", nil), asynq.Queue(r.name)); err != nil {
			t.Fatal(err)
		}
		if err := s.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Shutdown)
		schedulers = append(schedulers, s)
	}
	r.eventually("the schedulers' entries", func() bool {
		entries, err := r.insp.SchedulerEntries()
		n := 0
		for _, e := range entries {
			for _, o := range e.Opts {
				if o.Type() == asynq.QueueOpt && o.Value() == r.name {
					n++
				}
			}
		}
		return err == nil && n == 2
	})
	mu.Lock()
	ch := done
	mu.Unlock()
	recv(r, ch, "two occurrences of each scheduler")
	for _, s := range schedulers {
		s.Shutdown()
	}
	mu.Lock()
	a, b := enqueued["A"], enqueued["B"]
	total := len(a) + len(b)
	mu.Unlock()
	both := 0
	for _, s := range a {
		if slices.Contains(b, s) {
			both++
		}
	}
	if both == 0 {
		t.Errorf("asynq: A enqueued at %v, B at %v: no occurrence enqueued by both", a, b)
	}
	r.eventually("every task enqueued handled", func() bool { mu.Lock(); defer mu.Unlock(); return handled == total })

	// redisq: two processes, each with its Queue value on a client of its
	// own, register the same typed job and run a worker.
	rc2 := redis.NewClient(&redis.Options{Addr: redisAddr})
	t.Cleanup(func() { _ = rc2.Close() })
	occurrences := make(chan string, 64)
	mux := redisq.NewMux()
	digest.Handle(mux, func(_ context.Context, m *redisq.Message, d Digest) error {
		if d.List != "all" {
			return redisq.SkipRetry(fmt.Errorf("digest of %q", d.List))
		}
		occurrences <- m.ID
		return nil
	})
	for i, c := range []*redis.Client{r.rc, rc2} {
		q := r.queue("")
		if c != r.rc {
			var err error
			if q, err = redisq.New(r.ctx, c, r.name); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = q.Close() })
		}
		out, err := digest.Register(r.ctx, q, "digest", redisq.Every(200*time.Millisecond), Digest{List: "all"})
		if want := []redisq.RegisterOutcome{redisq.RegistrationCreated, redisq.RegistrationUnchanged}[i]; err != nil || out != want {
			t.Errorf("redisq: Register in process %d: %v, %v; want %v", i, out, err, want)
		}
		r.worker(q, mux.Serve, redisq.WorkerOptions{})
	}
	var times []time.Time
	for range 6 {
		id := recv(r, occurrences, "redisq's occurrences")
		name, at, ok := redisq.Occurrence(id)
		if !ok || name != "digest" {
			t.Fatalf("redisq: %q is no occurrence of digest", id)
		}
		times = append(times, at)
	}
	slices.SortFunc(times, time.Time.Compare)
	for i := 1; i < len(times); i++ {
		if d := times[i].Sub(times[i-1]); d != 200*time.Millisecond {
			t.Errorf("redisq: occurrences %v: %v apart, want each once, 200ms apart", times, d)
			break
		}
	}
	var logs strings.Builder
	var logMu sync.Mutex
	q := r.queue("", redisq.WithLogger(slog.New(slog.NewTextHandler(lockedWriter{&logMu, &logs}, nil))))
	regs, err := q.Registrations(r.ctx)
	if err != nil || len(regs) != 1 || regs[0].Name != "digest" || regs[0].Job.Kind != digest.Name {
		t.Errorf("redisq: Registrations %+v, %v", regs, err)
	}
	// The untyped Register of a payload that the kind's handler, known to
	// this process, cannot decode is warned of: each occurrence would die.
	if _, err := q.Register(r.ctx, "digest-2", redisq.Every(time.Hour), nil, redisq.RegisterJob(redisq.Job{Kind: digest.Name})); err != nil {
		t.Errorf("redisq: Register: %v", err)
	}
	logMu.Lock()
	warned := logs.String()
	logMu.Unlock()
	if !strings.Contains(warned, "level=WARN") || !strings.Contains(warned, "does not decode") {
		t.Errorf("redisq: Register of a payload the kind's handler cannot decode was not warned of: %q", warned)
	}
	if _, err := q.Unregister(r.ctx, "digest-2"); err != nil {
		t.Errorf("redisq: Unregister: %v", err)
	}
	if _, err := q.Unregister(r.ctx, "digest"); err != nil {
		t.Errorf("redisq: Unregister: %v", err)
	}
	if regs, err := q.Registrations(r.ctx); err != nil || len(regs) != 0 {
		t.Errorf("redisq: Registrations after Unregister %+v, %v", regs, err)
	}
}

// TestFromAsynqSchedulerCron: the cron specs of asynq's Scheduler are
// redisq's Cron (robfig/cron/v3's: five fields, the descriptors; redisq
// also takes six, seconds first, which asynq refuses). Both read them in
// UTC unless told otherwise: asynq by SchedulerOpts.Location, redisq by
// CronIn(spec, loc) or a CRON_TZ= prefix.
func TestFromAsynqSchedulerCron(t *testing.T) {
	r := newRig(t)
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Skip("no time zone database:", err)
	}
	specs := []string{"0 9 * * *", "*/5 9-17 * * 1-5", "@daily", "@every 90s"}
	seconds := "*/5 * * * * *"
	if _, err := asynq.NewSchedulerFromRedisClient(r.rc, nil).Register(seconds, asynq.NewTask("cron", nil)); err == nil {
		t.Errorf("asynq accepted %q", seconds)
	}
	if s, err := redisq.Cron(seconds); err != nil || !s.Next(time.Unix(0, 0).UTC()).Equal(time.Unix(5, 0).UTC()) {
		t.Errorf("redisq: Cron(%q): %v", seconds, err)
	}
	nexts := map[string]time.Time{} // by location and spec, asynq's
	for _, loc := range []*time.Location{time.UTC, paris} {
		s := asynq.NewSchedulerFromRedisClient(r.rc, &asynq.SchedulerOpts{LogLevel: asynq.FatalLevel, HeartbeatInterval: 100 * time.Millisecond, Location: loc})
		for _, spec := range specs {
			if _, err := s.Register(spec, asynq.NewTask("cron", []byte(loc.String())), asynq.Queue(r.name)); err != nil {
				t.Errorf("asynq: %q: %v", spec, err)
			}
		}
		if err := s.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Shutdown)
	}
	r.eventually("asynq's entries", func() bool {
		entries, err := r.insp.SchedulerEntries()
		if err != nil {
			return false
		}
		for _, e := range entries {
			if e.Task.Type() == "cron" && (string(e.Task.Payload()) == "UTC" || string(e.Task.Payload()) == "Europe/Paris") {
				nexts[string(e.Task.Payload())+" "+e.Spec] = e.Next
			}
		}
		return len(nexts) == 2*len(specs)
	})
	now := time.Now()
	nine := func(loc *time.Location) time.Time {
		n := time.Date(now.In(loc).Year(), now.In(loc).Month(), now.In(loc).Day(), 9, 0, 0, 0, loc)
		if !n.After(now) {
			n = time.Date(n.Year(), n.Month(), n.Day()+1, 9, 0, 0, 0, loc)
		}
		return n
	}
	if got := nexts["UTC 0 9 * * *"]; !got.Equal(nine(time.UTC)) {
		t.Errorf("asynq: 0 9 * * * next at %v, want 09:00 UTC", got)
	}
	if got := nexts["Europe/Paris 0 9 * * *"]; !got.Equal(nine(paris)) {
		t.Errorf("asynq: 0 9 * * * in Paris next at %v, want 09:00 Paris", got)
	}
	for _, spec := range specs {
		s, err := redisq.Cron(spec)
		if err != nil {
			t.Errorf("redisq: Cron(%q): %v", spec, err)
			continue
		}
		sp, err := redisq.CronIn(spec, paris)
		if err != nil {
			t.Errorf("redisq: CronIn(%q, Paris): %v", spec, err)
			continue
		}
		tz, err := redisq.Cron("CRON_TZ=Europe/Paris " + spec)
		if err != nil {
			t.Errorf("redisq: Cron(CRON_TZ=Europe/Paris %s): %v", spec, err)
			continue
		}
		if spec == "@every 90s" {
			continue // asynq's Next is from its start, redisq's from the argument
		}
		// asynq computed its Next a little before now: compare from then.
		from := nexts["UTC "+spec].Add(-time.Nanosecond)
		if prev := nexts["UTC "+spec]; s.Next(from) != prev {
			t.Errorf("redisq: Cron(%q) next after %v is %v, asynq's %v", spec, from, s.Next(from), prev)
		}
		from = nexts["Europe/Paris "+spec].Add(-time.Nanosecond)
		if want := nexts["Europe/Paris "+spec]; !sp.Next(from).Equal(want) || !tz.Next(from).Equal(want) {
			t.Errorf("redisq: %q in Paris next after %v is %v (CRON_TZ: %v), asynq's %v", spec, from, sp.Next(from), tz.Next(from), want)
		}
	}
}

// Digest is the payload of the recurring job of TestFromAsynqScheduler.
type Digest struct {
	List string `json:"list"`
}

var digest = redisq.JobKind[Digest]{Name: "digest"}

// specs is a PeriodicTaskConfigProvider whose configs the test changes.
type specs struct {
	mu   sync.Mutex
	cfgs []*asynq.PeriodicTaskConfig
}

func (p *specs) set(cfgs ...*asynq.PeriodicTaskConfig) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cfgs = cfgs
}

func (p *specs) GetConfigs() ([]*asynq.PeriodicTaskConfig, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.cfgs), nil
}

// TestFromAsynqPeriodicTaskManager: asynq's PeriodicTaskManager syncs the
// Scheduler's entries with its provider's configs every SyncInterval;
// redisq's registrations live in Redis, so a process calls Register for
// each of its jobs at every start (RegistrationUnchanged when nothing
// changed: the series goes on; RegistrationUpdated when it did) and
// Unregister for a job it drops.
func TestFromAsynqPeriodicTaskManager(t *testing.T) {
	r := newRig(t)
	provider := &specs{}
	provider.set(&asynq.PeriodicTaskConfig{Cronspec: "@every 1h", Task: asynq.NewTask("report", nil), Opts: []asynq.Option{asynq.Queue(r.name)}})
	mgr, err := asynq.NewPeriodicTaskManager(asynq.PeriodicTaskManagerOpts{
		PeriodicTaskConfigProvider: provider,
		RedisUniversalClient:       r.rc,
		SchedulerOpts:              &asynq.SchedulerOpts{LogLevel: asynq.FatalLevel, HeartbeatInterval: 100 * time.Millisecond},
		SyncInterval:               100 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := mgr.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(mgr.Shutdown)
	spec := func() []string {
		entries, err := r.insp.SchedulerEntries()
		if err != nil {
			t.Fatal(err)
		}
		var s []string
		for _, e := range entries {
			if e.Task.Type() == "report" && slices.ContainsFunc(e.Opts, func(o asynq.Option) bool { return o.Value() == r.name }) {
				s = append(s, e.Spec)
			}
		}
		return s
	}
	r.eventually("asynq's entry", func() bool { return slices.Equal(spec(), []string{"@every 1h"}) })
	provider.set(&asynq.PeriodicTaskConfig{Cronspec: "@every 2h", Task: asynq.NewTask("report", nil), Opts: []asynq.Option{asynq.Queue(r.name)}})
	r.eventually("asynq's changed entry", func() bool { return slices.Equal(spec(), []string{"@every 2h"}) })
	provider.set()
	r.eventually("asynq's entry removed", func() bool { return len(spec()) == 0 })

	q := r.queue("")
	register := func(s redisq.Schedule) redisq.RegisterOutcome {
		out, err := q.Register(r.ctx, "report", s, nil, redisq.RegisterJob(redisq.Job{Kind: "report"}))
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	first := register(redisq.Every(time.Hour))
	reg, err := q.Registration(r.ctx, "report")
	if err != nil {
		t.Fatal(err)
	}
	again := register(redisq.Every(time.Hour)) // the next start of the process
	reg2, err := q.Registration(r.ctx, "report")
	if err != nil {
		t.Fatal(err)
	}
	changed := register(redisq.Every(2 * time.Hour))
	if first != redisq.RegistrationCreated || again != redisq.RegistrationUnchanged || changed != redisq.RegistrationUpdated {
		t.Errorf("redisq: Register outcomes %v, %v, %v; want created, unchanged, updated", first, again, changed)
	}
	if reg2.EnqueuedID != reg.EnqueuedID {
		t.Errorf("redisq: an unchanged Register enqueued %s after %s", reg2.EnqueuedID, reg.EnqueuedID)
	}
	if _, err := q.Unregister(r.ctx, "report"); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Registration(r.ctx, "report"); err == nil {
		t.Error("redisq: the registration is still there after Unregister")
	}
}

// lockedWriter serializes writes to w (a log sink written by several
// goroutines).
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
