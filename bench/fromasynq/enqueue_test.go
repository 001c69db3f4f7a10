package fromasynq

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/dq-go/delayqueue/redisq"
	"github.com/hibiken/asynq"
)

// TestFromAsynqQueue: asynq's Queue(name) is an option of each task
// ("default" without one) and a server lists the queues it takes from
// (Config.Queues); redisq has one
// Queue value per name, and one Worker over several (NewMultiWorker). Both
// run each job on the queue it was put in, and tell the handler which.
func TestFromAsynqQueue(t *testing.T) {
	r := newRig(t)
	critical, low := r.sub("critical"), r.sub("low")
	want := map[string]string{"a": critical, "b": low}

	got := make(chan [2]string, 4)
	r.enqueue(asynq.NewTask("job", nil), asynq.Queue(critical), asynq.TaskID("a"))
	r.enqueue(asynq.NewTask("job", nil), asynq.Queue(low), asynq.TaskID("b"))
	r.asynqServer(asynq.HandlerFunc(func(ctx context.Context, _ *asynq.Task) error {
		id, _ := asynq.GetTaskID(ctx)
		qname, _ := asynq.GetQueueName(ctx)
		got <- [2]string{id, qname}
		return nil
	}), func(c *asynq.Config) { c.Queues = map[string]int{critical: 1, low: 1} })
	info, err := r.ac.Enqueue(asynq.NewTask("job", nil), asynq.ProcessIn(time.Hour))
	if err != nil || info.Queue != "default" {
		t.Errorf("asynq: a task without Queue went to %q, %v; want default", info.Queue, err)
	}
	if err == nil {
		_ = r.insp.DeleteTask("default", info.ID)
	}
	seen := map[string]string{}
	for range 2 {
		v := recv(r, got, "asynq's tasks")
		seen[v[0]] = v[1]
	}
	if !maps.Equal(seen, want) {
		t.Errorf("asynq: queue by task %v, want %v", seen, want)
	}

	qc, ql := r.queue(critical), r.queue(low)
	if _, err := qc.Add(r.ctx, redisq.EnqueueItem{ID: "a", Job: redisq.Job{Kind: "job"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := ql.Add(r.ctx, redisq.EnqueueItem{ID: "b", Job: redisq.Job{Kind: "job"}}); err != nil {
		t.Fatal(err)
	}
	r.run(redisq.NewMultiWorker(func(_ context.Context, m *redisq.Message) error {
		got <- [2]string{m.ID, m.QueueName()}
		return nil
	}, redisq.WorkerOptions{}, redisq.WorkerQueue{Queue: qc}, redisq.WorkerQueue{Queue: ql}))
	seen = map[string]string{}
	for range 2 {
		v := recv(r, got, "redisq's items")
		seen[v[0]] = v[1]
	}
	if !maps.Equal(seen, want) {
		t.Errorf("redisq: queue by item %v, want %v", seen, want)
	}
}

// TestFromAsynqTaskID: asynq's TaskID(id) is redisq's id argument, and
// ErrTaskIDConflict is ErrDuplicate: an id is refused while a job of that
// id exists in any state (completed and kept for its Retention too), and
// free again once the job is gone. asynq makes an id when none is given;
// redisq needs one.
func TestFromAsynqTaskID(t *testing.T) {
	r := newRig(t)

	if info := r.enqueue(asynq.NewTask("job", nil)); info.ID == "" {
		t.Error("asynq made no id for a task without TaskID")
	}
	r.enqueue(asynq.NewTask("job", nil), asynq.TaskID("order:1"))
	if _, err := r.ac.Enqueue(asynq.NewTask("job", nil), asynq.Queue(r.name), asynq.TaskID("order:1")); !errors.Is(err, asynq.ErrTaskIDConflict) {
		t.Errorf("asynq: second TaskID(order:1): %v, want ErrTaskIDConflict", err)
	}
	r.asynqServer(asynq.HandlerFunc(func(context.Context, *asynq.Task) error { return nil }), nil)
	r.asynqGone("order:1")
	r.enqueue(asynq.NewTask("job", nil), asynq.TaskID("order:1")) // free again
	r.enqueue(asynq.NewTask("job", nil), asynq.TaskID("order:2"), asynq.Retention(time.Hour))
	r.asynqState("order:2", asynq.TaskStateCompleted)
	if _, err := r.ac.Enqueue(asynq.NewTask("job", nil), asynq.Queue(r.name), asynq.TaskID("order:2")); !errors.Is(err, asynq.ErrTaskIDConflict) {
		t.Errorf("asynq: TaskID of a completed task: %v, want ErrTaskIDConflict", err)
	}

	q := r.queue("")
	if _, err := q.Add(r.ctx, redisq.EnqueueItem{Job: redisq.Job{Kind: "job"}}); err == nil {
		t.Error("redisq: an item without an id was stored")
	}
	add := func(id string, opts ...redisq.JobOption) error {
		var j redisq.Job
		for _, o := range append([]redisq.JobOption{redisq.Kind("job")}, opts...) {
			o(&j)
		}
		_, err := q.Add(r.ctx, redisq.EnqueueItem{ID: id, Job: j})
		return err
	}
	if err := add("order:1"); err != nil {
		t.Fatal(err)
	}
	if err := add("order:1"); !errors.Is(err, redisq.ErrDuplicate) {
		t.Errorf("redisq: second order:1: %v, want ErrDuplicate", err)
	}
	r.worker(q, func(context.Context, *redisq.Message) error { return nil }, redisq.WorkerOptions{})
	r.redisqGone(q, "order:1")
	if err := add("order:1"); err != nil { // free again
		t.Errorf("redisq: order:1 once gone: %v", err)
	}
	if err := add("order:2", redisq.Retention(time.Hour)); err != nil {
		t.Fatal(err)
	}
	r.redisqState(q, "order:2", redisq.StateCompleted)
	if err := add("order:2"); !errors.Is(err, redisq.ErrDuplicate) {
		t.Errorf("redisq: the id of a completed item: %v, want ErrDuplicate", err)
	}
}

// TestFromAsynqUnique: asynq's Unique(ttl) and ErrDuplicateTask are
// redisq's Unique(key, window) and ErrUniqueHeld (an ErrDuplicate). asynq's
// key is the task's type, payload and queue, its ttl at least 1 s, and a
// success ends the lock; redisq's key is the caller's, its window any
// number of milliseconds, and it holds until it ends whatever became of
// the job (ReleaseUnique ends it early).
func TestFromAsynqUnique(t *testing.T) {
	r := newRig(t)

	remind := func(order string) *asynq.Task { return asynq.NewTask("remind", []byte(order)) }
	r.enqueue(remind("42"), asynq.Unique(time.Hour), asynq.TaskID("remind-1"))
	if _, err := r.ac.Enqueue(remind("42"), asynq.Queue(r.name), asynq.Unique(time.Hour)); !errors.Is(err, asynq.ErrDuplicateTask) {
		t.Errorf("asynq: same type and payload: %v, want ErrDuplicateTask", err)
	}
	r.enqueue(remind("43"), asynq.Unique(time.Hour)) // another payload is another key
	if _, err := r.ac.Enqueue(remind("44"), asynq.Queue(r.name), asynq.Unique(500*time.Millisecond)); err == nil {
		t.Error("asynq accepted Unique(500ms)")
	}
	r.asynqServer(asynq.HandlerFunc(func(context.Context, *asynq.Task) error { return nil }), nil)
	r.asynqGone("remind-1")
	r.enqueue(remind("42"), asynq.Unique(time.Hour)) // the success ended the lock

	q := r.queue("")
	add := func(id, key string, window time.Duration) error {
		_, err := q.Add(r.ctx, redisq.EnqueueItem{ID: id, Job: redisq.Job{Kind: "remind", UniqueKey: key, UniqueFor: window}})
		return err
	}
	if err := add("remind-1", "remind:order:42", time.Hour); err != nil {
		t.Fatal(err)
	}
	err := add("remind-2", "remind:order:42", time.Hour)
	if !errors.Is(err, redisq.ErrUniqueHeld) || !errors.Is(err, redisq.ErrDuplicate) {
		t.Errorf("redisq: same key: %v, want ErrUniqueHeld (an ErrDuplicate)", err)
	}
	if err := add("remind-3", "remind:order:43", 500*time.Millisecond); err != nil {
		t.Errorf("redisq: a 500 ms window: %v", err)
	}
	r.worker(q, func(context.Context, *redisq.Message) error { return nil }, redisq.WorkerOptions{})
	r.redisqGone(q, "remind-1")
	if err := add("remind-4", "remind:order:42", time.Hour); !errors.Is(err, redisq.ErrUniqueHeld) {
		t.Errorf("redisq: same key after the first one ran: %v, want ErrUniqueHeld", err)
	}
	if held, err := q.ReleaseUnique(r.ctx, "remind:order:42"); err != nil || !held {
		t.Fatalf("ReleaseUnique: %v, %v", held, err)
	}
	if err := add("remind-5", "remind:order:42", time.Hour); err != nil {
		t.Errorf("redisq: same key after ReleaseUnique: %v", err)
	}
}

// TestFromAsynqProcessAt: asynq's ProcessAt(t) and ProcessIn(d) are
// redisq's Enqueue(at) and EnqueueAfter(d). asynq keeps the time in whole
// seconds, cut down, and moves due tasks to its pending list by polling, so
// a task may run up to a second before its time; redisq keeps it to the
// millisecond, rounded up, and never delivers before it by the Redis clock.
func TestFromAsynqProcessAt(t *testing.T) {
	r := newRig(t)

	base := time.Now().Truncate(time.Second).Add(2 * time.Second)
	ats := []time.Time{base.Add(999 * time.Millisecond), base.Add(1999 * time.Millisecond), base.Add(2999 * time.Millisecond)}
	for i, at := range ats {
		r.enqueue(asynq.NewTask("job", nil), asynq.TaskID(fmt.Sprint(i)), asynq.ProcessAt(at))
		if got := r.task(fmt.Sprint(i)).NextProcessAt; !got.Equal(at.Truncate(time.Second)) {
			t.Errorf("asynq: ProcessAt(%v) stored as %v, want %v", at, got, at.Truncate(time.Second))
		}
	}
	type start struct {
		id string
		at time.Time
	}
	starts := make(chan start, len(ats))
	r.asynqServer(asynq.HandlerFunc(func(ctx context.Context, _ *asynq.Task) error {
		id, _ := asynq.GetTaskID(ctx)
		starts <- start{id, time.Now()}
		return nil
	}), nil)
	early := 0
	for range ats {
		s := recv(r, starts, "asynq's tasks")
		var i int
		fmt.Sscan(s.id, &i)
		if s.at.Before(ats[i]) {
			early++
		}
	}
	if early == 0 {
		t.Errorf("asynq ran none of %d tasks before its ProcessAt", len(ats))
	}

	q := r.queue("")
	at := time.Now().Add(200 * time.Millisecond)
	if err := q.Enqueue(r.ctx, "at", nil, at); err != nil {
		t.Fatal(err)
	}
	due, err := q.EnqueueAfter(r.ctx, "after", nil, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	type msg struct {
		id             string
		due, claimedAt time.Time
		now            time.Time
	}
	msgs := make(chan msg, 2)
	r.worker(q, func(_ context.Context, m *redisq.Message) error {
		msgs <- msg{m.ID, m.Due, m.ClaimedAt, time.Now()}
		return nil
	}, redisq.WorkerOptions{})
	for range 2 {
		m := recv(r, msgs, "redisq's items")
		want := due
		if m.id == "at" {
			want = at.Round(0).Add(time.Millisecond - 1).Truncate(time.Millisecond) // rounded up
		}
		if !m.due.Equal(want) {
			t.Errorf("redisq %s: due %v, want %v", m.id, m.due, want)
		}
		if m.claimedAt.Before(m.due) || m.now.Round(0).Before(m.due) {
			t.Errorf("redisq %s: due %v, claimed %v, handler at %v: early", m.id, m.due, m.claimedAt, m.now)
		}
	}
}

// TestFromAsynqHeaders: asynq's NewTaskWithHeaders and Task.Headers are
// redisq's Header job option (or Job.Headers) and Message.Headers. redisq
// refuses headers over MaxHeaderBytes in all, storing nothing; asynq has
// no bound.
func TestFromAsynqHeaders(t *testing.T) {
	r := newRig(t)
	headers := map[string]string{"tenant": "7", "traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
	big := map[string]string{"big": strings.Repeat("x", redisq.MaxHeaderBytes+1)}
	got := make(chan map[string]string, 4)

	r.enqueue(asynq.NewTaskWithHeaders("job", nil, headers), asynq.TaskID("h"))
	r.enqueue(asynq.NewTaskWithHeaders("job", nil, big), asynq.TaskID("big"))
	r.asynqServer(asynq.HandlerFunc(func(_ context.Context, task *asynq.Task) error {
		got <- task.Headers()
		return nil
	}), nil)
	seen := []map[string]string{recv(r, got, "asynq's task"), recv(r, got, "asynq's task")}
	if !slicesHave(seen, headers) || !slicesHave(seen, big) {
		t.Errorf("asynq: headers %v", seen)
	}

	q := r.queue("")
	kind := redisq.JobKind[struct{}]{Name: "job"}
	if _, err := kind.EnqueueAfter(r.ctx, q, "h", struct{}{}, 0,
		redisq.Header("tenant", headers["tenant"]), redisq.Header("traceparent", headers["traceparent"])); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Add(r.ctx, redisq.EnqueueItem{ID: "big", Job: redisq.Job{Headers: big}}); err == nil {
		t.Error("redisq stored headers over MaxHeaderBytes")
	}
	if _, err := q.Get(r.ctx, "big"); !errors.Is(err, redisq.ErrNotFound) {
		t.Errorf("redisq: the refused item: %v, want ErrNotFound", err)
	}
	r.worker(q, func(_ context.Context, m *redisq.Message) error {
		got <- m.Headers
		return nil
	}, redisq.WorkerOptions{})
	if h := recv(r, got, "redisq's item"); !maps.Equal(h, headers) {
		t.Errorf("redisq: headers %v, want %v", h, headers)
	}
}

func slicesHave(ms []map[string]string, m map[string]string) bool {
	for _, x := range ms {
		if maps.Equal(x, m) {
			return true
		}
	}
	return false
}

// TestFromAsynqRetention: asynq's Retention(d) and ResultWriter are
// redisq's Retention(d) and Message.SetResult, read back from Item.Result
// (asynq: TaskInfo.Result) while the job is kept, completed (asynq's
// ListCompletedTasks is List(StateCompleted)). asynq writes
// a result at once: it is seen while the task runs and stays on a task
// that then fails; redisq writes it with the ack: nothing is seen before,
// and a run that fails leaves none.
func TestFromAsynqRetention(t *testing.T) {
	r := newRig(t)
	running := make(chan string, 2)
	release := make(chan struct{})

	r.enqueue(asynq.NewTask("ok", nil), asynq.TaskID("ok"), asynq.Retention(time.Hour))
	r.enqueue(asynq.NewTask("fail", nil), asynq.TaskID("fail"), asynq.Retention(time.Hour))
	r.asynqServer(asynq.HandlerFunc(func(_ context.Context, task *asynq.Task) error {
		if _, err := task.ResultWriter().Write([]byte("result of " + task.Type())); err != nil {
			return err
		}
		if task.Type() == "fail" {
			return fmt.Errorf("failed: %w", asynq.SkipRetry)
		}
		running <- task.Type()
		<-release
		return nil
	}), nil)
	recv(r, running, "asynq's handler")
	if info := r.task("ok"); info.State != asynq.TaskStateActive || string(info.Result) != "result of ok" {
		t.Errorf("asynq: while it runs: %v, result %q, want active with its result", info.State, info.Result)
	}
	if info := r.asynqState("fail", asynq.TaskStateArchived); string(info.Result) != "result of fail" {
		t.Errorf("asynq: the failed task's result %q, want the one written", info.Result)
	}
	release <- struct{}{}
	if info := r.asynqState("ok", asynq.TaskStateCompleted); string(info.Result) != "result of ok" {
		t.Errorf("asynq: completed with result %q", info.Result)
	}
	if list, err := r.insp.ListCompletedTasks(r.name); err != nil || len(list) != 1 || list[0].ID != "ok" {
		t.Errorf("asynq: ListCompletedTasks %v, %v", list, err)
	}

	q := r.queue("")
	for _, kind := range []string{"ok", "fail"} {
		if _, err := q.Add(r.ctx, redisq.EnqueueItem{ID: kind, Job: redisq.Job{Kind: kind, Retention: time.Hour}}); err != nil {
			t.Fatal(err)
		}
	}
	r.worker(q, func(_ context.Context, m *redisq.Message) error {
		if err := m.SetResult([]byte("result of " + m.Kind)); err != nil {
			return err
		}
		if m.Kind == "fail" {
			return redisq.SkipRetry(errors.New("failed"))
		}
		running <- m.Kind
		<-release
		return nil
	}, redisq.WorkerOptions{})
	recv(r, running, "redisq's handler")
	if it := r.item(q, "ok"); it.State != redisq.StateInFlight || it.Result != nil {
		t.Errorf("redisq: while it runs: %v, result %q, want in flight with none", it.State, it.Result)
	}
	if it := r.redisqState(q, "fail", redisq.StateDead); it.Result != nil {
		t.Errorf("redisq: the failed item's result %q, want none", it.Result)
	}
	release <- struct{}{}
	if it := r.redisqState(q, "ok", redisq.StateCompleted); string(it.Result) != "result of ok" {
		t.Errorf("redisq: completed with result %q", it.Result)
	}
	if page, err := q.List(r.ctx, redisq.StateCompleted, redisq.ListOptions{Payloads: true}); err != nil || page.Total != 1 || string(page.Items[0].Result) != "result of ok" {
		t.Errorf("redisq: List(completed) %+v, %v", page, err)
	}
}
