package fromasynq

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/dq-go/delayqueue/redisq"
	"github.com/hibiken/asynq"
)

// TestFromAsynqInspectorGetTaskInfo: asynq's GetTaskInfo and List*Tasks
// are redisq's Get and List. asynq's pending, scheduled and retry states
// are all redisq's scheduled: due or not (Item.Due; Stats.DueBacklog
// counts the due ones), with Attempts above 0 after a failure.
func TestFromAsynqInspectorGetTaskInfo(t *testing.T) {
	r := newRig(t)

	r.enqueue(asynq.NewTask("job", []byte("p")), asynq.TaskID("now"))
	r.enqueue(asynq.NewTask("job", nil), asynq.TaskID("later"), asynq.ProcessIn(time.Hour))
	failed := r.sub("failed")
	r.enqueue(asynq.NewTask("job", nil), asynq.TaskID("failed"), asynq.Queue(failed))
	r.asynqServer(failing(&counter{}), func(c *asynq.Config) {
		c.Queues = map[string]int{failed: 1}
		c.RetryDelayFunc = func(int, error, *asynq.Task) time.Duration { return time.Hour }
	})
	if info := r.task("now"); info.State != asynq.TaskStatePending || string(info.Payload) != "p" {
		t.Errorf("asynq: a task due now: %v, payload %q", info.State, info.Payload)
	}
	if info := r.task("later"); info.State != asynq.TaskStateScheduled {
		t.Errorf("asynq: a task due in an hour: %v", info.State)
	}
	r.eventually("asynq's retry", func() bool {
		info, err := r.insp.GetTaskInfo(failed, "failed")
		return err == nil && info.State == asynq.TaskStateRetry && info.Retried == 1
	})
	pending, err1 := r.insp.ListPendingTasks(r.name)
	scheduled, err2 := r.insp.ListScheduledTasks(r.name)
	retry, err3 := r.insp.ListRetryTasks(failed)
	if err := errors.Join(err1, err2, err3); err != nil || len(pending) != 1 || len(scheduled) != 1 || len(retry) != 1 {
		t.Errorf("asynq: lists %d pending, %d scheduled, %d retry, %v; want one each", len(pending), len(scheduled), len(retry), err)
	}

	q := r.queue("")
	if err := q.Enqueue(r.ctx, "now", []byte("p"), time.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := q.EnqueueAfter(r.ctx, "later", nil, time.Hour); err != nil {
		t.Fatal(err)
	}
	qf := r.queue(failed)
	r.addJob(qf, "failed", redisq.Backoff(time.Hour, time.Hour))
	r.worker(qf, failingR(&counter{}), redisq.WorkerOptions{})
	st, err := q.Stats(r.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if it := r.item(q, "now"); it.State != redisq.StateScheduled || it.Due.After(st.Now) || string(it.Payload) != "p" {
		t.Errorf("redisq: an item due now: %v due %v (now %v), payload %q", it.State, it.Due, st.Now, it.Payload)
	}
	if it := r.item(q, "later"); it.State != redisq.StateScheduled || !it.Due.After(st.Now.Add(59*time.Minute)) {
		t.Errorf("redisq: an item due in an hour: %v due %v", it.State, it.Due)
	}
	if st.Scheduled != 2 || st.DueBacklog != 1 {
		t.Errorf("redisq: %d scheduled, %d due, want 2, 1", st.Scheduled, st.DueBacklog)
	}
	r.eventually("redisq's retry", func() bool {
		it, err := qf.Get(r.ctx, "failed")
		return err == nil && it.State == redisq.StateScheduled && it.Attempts == 1
	})
	page, err := q.List(r.ctx, redisq.StateScheduled, redisq.ListOptions{})
	if err != nil || page.Total != 2 || len(page.Items) != 2 || page.Items[0].ID != "now" {
		t.Errorf("redisq: List(scheduled) %+v, %v; want now, later", page, err)
	}
}

// TestFromAsynqInspectorDeleteTask: asynq's DeleteTask is redisq's Cancel
// (and ListActiveTasks is List(StateInFlight)):
// a waiting job is deleted at once. asynq refuses to delete an active
// task (it runs on); redisq marks an in-flight job (CancelMarked), which
// runs on and is deleted when it settles, whatever the handler returns,
// never retried.
func TestFromAsynqInspectorDeleteTask(t *testing.T) {
	r := newRig(t)
	running := make(chan string, 2)
	release := make(chan struct{})
	runs := &counter{}
	handle := func(id string) error {
		runs.add(id)
		running <- id
		<-release
		return errors.New("fail")
	}

	r.enqueue(asynq.NewTask("job", nil), asynq.TaskID("later"), asynq.ProcessIn(time.Hour))
	if err := r.insp.DeleteTask(r.name, "later"); err != nil {
		t.Errorf("asynq: DeleteTask of a scheduled task: %v", err)
	}
	r.asynqGone("later")
	r.enqueue(asynq.NewTask("job", nil), asynq.TaskID("active"), asynq.MaxRetry(0))
	r.asynqServer(asynq.HandlerFunc(func(ctx context.Context, _ *asynq.Task) error {
		id, _ := asynq.GetTaskID(ctx)
		return handle(id)
	}), nil)
	recv(r, running, "asynq's handler")
	if active, err := r.insp.ListActiveTasks(r.name); err != nil || len(active) != 1 || active[0].ID != "active" {
		t.Errorf("asynq: ListActiveTasks %v, %v", active, err)
	}
	if err := r.insp.DeleteTask(r.name, "active"); err == nil {
		t.Error("asynq: DeleteTask of an active task succeeded")
	}
	release <- struct{}{}
	r.asynqState("active", asynq.TaskStateArchived) // it ran on, failed, archived

	q := r.queue("")
	if _, err := q.EnqueueAfter(r.ctx, "later", nil, time.Hour); err != nil {
		t.Fatal(err)
	}
	if out, err := q.Cancel(r.ctx, "later"); err != nil || out != redisq.CancelRemoved {
		t.Errorf("redisq: Cancel of a scheduled item: %v, %v", out, err)
	}
	r.redisqGone(q, "later")
	r.addJob(q, "active", redisq.MaxAttempts(5))
	r.worker(q, func(_ context.Context, m *redisq.Message) error { return handle("r-" + m.ID) }, redisq.WorkerOptions{})
	recv(r, running, "redisq's handler")
	if page, err := q.List(r.ctx, redisq.StateInFlight, redisq.ListOptions{}); err != nil || page.Total != 1 || page.Items[0].ID != "active" {
		t.Errorf("redisq: List(in flight) %+v, %v", page, err)
	}
	if out, err := q.Cancel(r.ctx, "active"); err != nil || out != redisq.CancelMarked {
		t.Errorf("redisq: Cancel of an item in flight: %v, %v", out, err)
	}
	release <- struct{}{}
	r.redisqGone(q, "active")
	if n := runs.get("r-active"); n != 1 {
		t.Errorf("redisq: the cancelled item ran %d times, want 1", n)
	}
}

// TestFromAsynqInspectorCancelProcessing: asynq's CancelProcessing cancels
// the running handler's ctx, and the task is retried. redisq has no
// equivalent: Cancel of an in-flight job marks it (Item.Cancelled) but
// leaves its handler's ctx alone; the job is deleted when it settles.
func TestFromAsynqInspectorCancelProcessing(t *testing.T) {
	r := newRig(t)
	runs := &counter{}
	running := make(chan context.Context, 2)
	release := make(chan struct{})

	r.enqueue(asynq.NewTask("job", nil), asynq.TaskID("a"), asynq.MaxRetry(1))
	r.asynqServer(asynq.HandlerFunc(func(ctx context.Context, _ *asynq.Task) error {
		if runs.add("a") > 1 {
			return nil
		}
		running <- ctx
		<-ctx.Done()
		return ctx.Err()
	}), nil)
	ctx := recv(r, running, "asynq's handler")
	// Best effort (a pub/sub message): send it until the handler sees it.
	r.eventually("asynq's cancellation", func() bool {
		if err := r.insp.CancelProcessing("a"); err != nil {
			t.Fatal(err)
		}
		select {
		case <-ctx.Done():
			return true
		case <-time.After(50 * time.Millisecond):
			return false
		}
	})
	if !errors.Is(ctx.Err(), context.Canceled) {
		t.Errorf("asynq: the handler's ctx ended with %v", ctx.Err())
	}
	r.asynqGone("a") // retried, and the retry succeeded
	if runs.get("a") != 2 {
		t.Errorf("asynq: %d runs, want 2", runs.get("a"))
	}

	q := r.queue("", redisq.WithVisibilityTimeout(300*time.Millisecond))
	r.addJob(q, "r")
	r.worker(q, func(ctx context.Context, m *redisq.Message) error {
		runs.add("r")
		running <- ctx
		<-release
		return nil
	}, redisq.WorkerOptions{})
	ctx = recv(r, running, "redisq's handler")
	if out, err := q.Cancel(r.ctx, "r"); err != nil || out != redisq.CancelMarked {
		t.Fatalf("redisq: Cancel in flight: %v, %v", out, err)
	}
	first := r.item(q, "r")
	if !first.Cancelled {
		t.Error("redisq: the item in flight is not marked Cancelled")
	}
	// The worker extends the lease every 100 ms: once it has since the
	// mark, the handler's ctx is still live.
	r.eventually("a lease extension", func() bool {
		it, err := q.Get(r.ctx, "r")
		return err == nil && it.LeaseDeadline.After(first.LeaseDeadline)
	})
	if ctx.Err() != nil {
		t.Errorf("redisq: Cancel ended the handler's ctx: %v", context.Cause(ctx))
	}
	close(release)
	r.redisqGone(q, "r")
	if runs.get("r") != 1 {
		t.Errorf("redisq: %d runs, want 1", runs.get("r"))
	}
}

// TestFromAsynqInspectorRunTask: asynq's RunTask is redisq's RunNow: a job
// waiting for its time runs now, an archived (dead) one runs again. asynq
// refuses a task already pending; RunNow leaves a due job in its place and
// says so (RunNowAlreadyDue). A revived asynq task keeps its retry count
// (one more failure archives it again at MaxRetry); RequeueDead and RunNow
// reset a redisq job's attempts.
func TestFromAsynqInspectorRunTask(t *testing.T) {
	r := newRig(t)
	runs := &counter{}

	r.enqueue(asynq.NewTask("job", nil), asynq.TaskID("later"), asynq.ProcessIn(time.Hour))
	r.enqueue(asynq.NewTask("job", nil), asynq.TaskID("pending"))
	if err := r.insp.RunTask(r.name, "pending"); err == nil {
		t.Error("asynq: RunTask of a pending task succeeded")
	}
	r.enqueue(asynq.NewTask("job", nil), asynq.TaskID("dead"), asynq.MaxRetry(1))
	handle := func(id string) error {
		n := runs.add(id)
		if id == "dead" || id == "r-dead" {
			return fmt.Errorf("fail %d", n)
		}
		return nil
	}
	r.asynqServer(asynq.HandlerFunc(func(ctx context.Context, _ *asynq.Task) error {
		id, _ := asynq.GetTaskID(ctx)
		return handle(id)
	}), nil)
	r.asynqGone("pending")
	r.asynqState("dead", asynq.TaskStateArchived)
	if err := r.insp.RunTask(r.name, "later"); err != nil {
		t.Errorf("asynq: RunTask of a scheduled task: %v", err)
	}
	r.asynqGone("later")
	if err := r.insp.RunTask(r.name, "dead"); err != nil {
		t.Errorf("asynq: RunTask of an archived task: %v", err)
	}
	r.eventually("asynq's third run of dead", func() bool { return runs.get("dead") == 3 })
	if info := r.asynqState("dead", asynq.TaskStateArchived); info.Retried != 1 || info.LastErr != "fail 3" {
		t.Errorf("asynq: the revived task archived with %d retries, %q; want 1 retry, fail 3", info.Retried, info.LastErr)
	}

	q := r.queue("")
	if _, err := q.EnqueueAfter(r.ctx, "later", nil, time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := q.Enqueue(r.ctx, "pending", nil, time.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	if res, err := q.RunNow(r.ctx, "pending"); err != nil || res.Outcome != redisq.RunNowAlreadyDue {
		t.Errorf("redisq: RunNow of a due item: %+v, %v; want RunNowAlreadyDue", res, err)
	}
	r.addJob(q, "dead", redisq.MaxAttempts(2))
	r.worker(q, func(_ context.Context, m *redisq.Message) error { return handle("r-" + m.ID) }, redisq.WorkerOptions{})
	r.redisqGone(q, "pending")
	r.redisqState(q, "dead", redisq.StateDead)
	if res, err := q.RunNow(r.ctx, "later"); err != nil || res.Outcome != redisq.RunNowMoved {
		t.Errorf("redisq: RunNow of a scheduled item: %+v, %v", res, err)
	}
	r.redisqGone(q, "later")
	if res, err := q.RunNow(r.ctx, "dead"); err != nil || res.Outcome != redisq.RunNowRequeued {
		t.Errorf("redisq: RunNow of a dead item: %+v, %v", res, err)
	}
	r.eventually("redisq's fourth run of dead", func() bool { return runs.get("r-dead") == 4 })
	if it := r.redisqState(q, "dead", redisq.StateDead); it.Attempts != 2 || it.DeadReason != "max attempts: fail 4" {
		t.Errorf("redisq: the revived item dead after %d attempts, %q; want 2, fail 4", it.Attempts, it.DeadReason)
	}
}

// TestFromAsynqInspectorPauseQueue: asynq's PauseQueue and UnpauseQueue
// are redisq's Pause and Resume: nothing of the queue runs meanwhile, in
// any process. asynq refuses to pause a paused queue; redisq's Pause of one
// changes nothing.
func TestFromAsynqInspectorPauseQueue(t *testing.T) {
	r := newRig(t)
	ran := make(chan string, 4)
	other := r.sub("other")

	if err := r.insp.PauseQueue(r.name); err != nil {
		t.Fatal(err)
	}
	if err := r.insp.PauseQueue(r.name); err == nil {
		t.Error("asynq: PauseQueue of a paused queue succeeded")
	}
	r.enqueue(asynq.NewTask("job", nil), asynq.TaskID("paused"))
	r.enqueue(asynq.NewTask("job", nil), asynq.TaskID("other"), asynq.Queue(other))
	r.asynqServer(asynq.HandlerFunc(func(ctx context.Context, _ *asynq.Task) error {
		id, _ := asynq.GetTaskID(ctx)
		ran <- id
		return nil
	}), func(c *asynq.Config) { c.Queues = map[string]int{r.name: 1, other: 1} })
	if id := recv(r, ran, "asynq's other queue"); id != "other" {
		t.Errorf("asynq: %s ran while its queue was paused", id)
	}
	if qi, err := r.insp.GetQueueInfo(r.name); err != nil || !qi.Paused || qi.Pending != 1 {
		t.Errorf("asynq: paused queue %+v, %v", qi, err)
	}
	if err := r.insp.UnpauseQueue(r.name); err != nil {
		t.Fatal(err)
	}
	if id := recv(r, ran, "asynq's unpaused queue"); id != "paused" {
		t.Errorf("asynq: ran %s", id)
	}

	q, qo := r.queue(""), r.queue(other)
	for range 2 {
		if err := q.Pause(r.ctx); err != nil {
			t.Errorf("redisq: Pause: %v", err)
		}
	}
	if _, err := q.EnqueueAfter(r.ctx, "paused", nil, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := qo.EnqueueAfter(r.ctx, "other", nil, 0); err != nil {
		t.Fatal(err)
	}
	r.run(redisq.NewMultiWorker(func(_ context.Context, m *redisq.Message) error {
		ran <- m.ID
		return nil
	}, redisq.WorkerOptions{}, redisq.WorkerQueue{Queue: q}, redisq.WorkerQueue{Queue: qo}))
	if id := recv(r, ran, "redisq's other queue"); id != "other" {
		t.Errorf("redisq: %s ran while its queue was paused", id)
	}
	if st, err := q.Stats(r.ctx); err != nil || !st.Paused || st.Scheduled != 1 {
		t.Errorf("redisq: paused queue %+v, %v", st, err)
	}
	if err := q.Resume(r.ctx); err != nil {
		t.Fatal(err)
	}
	if id := recv(r, ran, "redisq's resumed queue"); id != "paused" {
		t.Errorf("redisq: ran %s", id)
	}
}

// TestFromAsynqInspectorArchived: asynq's ListArchivedTasks,
// RunAllArchivedTasks and DeleteAllArchivedTasks are redisq's
// List(StateDead), RequeueAllDead and DeleteAllDead; archived is dead.
func TestFromAsynqInspectorArchived(t *testing.T) {
	r := newRig(t)
	runs := &counter{}
	ids := []string{"a", "b", "c"}

	for _, id := range ids {
		r.enqueue(asynq.NewTask("job", nil), asynq.TaskID(id), asynq.MaxRetry(0))
	}
	r.asynqServer(failing(runs), nil)
	for _, id := range ids {
		r.asynqState(id, asynq.TaskStateArchived)
	}
	if list, err := r.insp.ListArchivedTasks(r.name); err != nil || len(list) != 3 {
		t.Errorf("asynq: %d archived, %v", len(list), err)
	}
	if n, err := r.insp.RunAllArchivedTasks(r.name); err != nil || n != 3 {
		t.Errorf("asynq: RunAllArchivedTasks: %d, %v", n, err)
	}
	r.eventually("asynq's second runs", func() bool { return runs.get("a")+runs.get("b")+runs.get("c") == 6 })
	for _, id := range ids {
		r.asynqState(id, asynq.TaskStateArchived)
	}
	if n, err := r.insp.DeleteAllArchivedTasks(r.name); err != nil || n != 3 {
		t.Errorf("asynq: DeleteAllArchivedTasks: %d, %v", n, err)
	}
	if qi, err := r.insp.GetQueueInfo(r.name); err != nil || qi.Size != 0 {
		t.Errorf("asynq: queue after the deletes %+v, %v", qi, err)
	}

	q := r.queue("", redisq.WithMaxAttempts(1))
	for _, id := range ids {
		r.addJob(q, "r-"+id)
	}
	r.worker(q, failingR(runs), redisq.WorkerOptions{})
	for _, id := range ids {
		r.redisqState(q, "r-"+id, redisq.StateDead)
	}
	if page, err := q.List(r.ctx, redisq.StateDead, redisq.ListOptions{}); err != nil || page.Total != 3 {
		t.Errorf("redisq: %d dead, %v", page.Total, err)
	}
	if n, err := q.RequeueAllDead(r.ctx); err != nil || n != 3 {
		t.Errorf("redisq: RequeueAllDead: %d, %v", n, err)
	}
	r.eventually("redisq's second runs", func() bool { return runs.get("r-a")+runs.get("r-b")+runs.get("r-c") == 6 })
	for _, id := range ids {
		r.redisqState(q, "r-"+id, redisq.StateDead)
	}
	if n, err := q.DeleteAllDead(r.ctx); err != nil || n != 3 {
		t.Errorf("redisq: DeleteAllDead: %d, %v", n, err)
	}
	if st, err := q.Stats(r.ctx); err != nil || st.Scheduled+st.InFlight+st.Dead != 0 {
		t.Errorf("redisq: queue after the deletes %+v, %v", st, err)
	}
}

// TestFromAsynqInspectorUpdateTaskPayload: asynq's UpdateTaskPayload (of a
// scheduled task) is redisq's ScheduleItem, an upsert that replaces the
// payload, the Job and the due time of a job waiting, due or not, and
// refuses one in flight (ErrInFlight). asynq refuses a pending task.
func TestFromAsynqInspectorUpdateTaskPayload(t *testing.T) {
	r := newRig(t)

	r.enqueue(asynq.NewTask("job", []byte("v1")), asynq.TaskID("later"), asynq.ProcessIn(time.Hour))
	r.enqueue(asynq.NewTask("job", []byte("v1")), asynq.TaskID("pending"))
	if err := r.insp.UpdateTaskPayload(r.name, "later", []byte("v2")); err != nil {
		t.Errorf("asynq: UpdateTaskPayload of a scheduled task: %v", err)
	}
	if info := r.task("later"); string(info.Payload) != "v2" || info.Type != "job" {
		t.Errorf("asynq: updated task %q, type %q", info.Payload, info.Type)
	}
	if err := r.insp.UpdateTaskPayload(r.name, "pending", []byte("v2")); err == nil {
		t.Error("asynq: UpdateTaskPayload of a pending task succeeded")
	}

	q := r.queue("")
	job := redisq.Job{Kind: "job"}
	for id, after := range map[string]time.Duration{"later": time.Hour, "pending": 0} {
		if _, err := q.Add(r.ctx, redisq.EnqueueItem{ID: id, Payload: []byte("v1"), After: after, Job: job}); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"later", "pending"} {
		due := r.item(q, id).Due
		if res, err := q.ScheduleItem(r.ctx, redisq.EnqueueItem{ID: id, Payload: []byte("v2"), At: due, Job: job}); err != nil || res.Created {
			t.Errorf("redisq: ScheduleItem of %s: %+v, %v", id, res, err)
		}
		if it := r.item(q, id); string(it.Payload) != "v2" || it.Kind != "job" || !it.Due.Equal(due) {
			t.Errorf("redisq: updated %s: %q, kind %q, due %v (was %v)", id, it.Payload, it.Kind, it.Due, due)
		}
	}
	running := make(chan struct{})
	release := make(chan struct{})
	r.worker(q, func(_ context.Context, m *redisq.Message) error {
		if m.ID == "pending" {
			close(running)
			<-release
		}
		return nil
	}, redisq.WorkerOptions{})
	recv(r, running, "redisq's handler")
	if _, err := q.ScheduleItem(r.ctx, redisq.EnqueueItem{ID: "pending", Payload: []byte("v3"), Job: job}); !errors.Is(err, redisq.ErrInFlight) {
		t.Errorf("redisq: ScheduleItem of an item in flight: %v, want ErrInFlight", err)
	}
	close(release)
}

// TestFromAsynqInspectorQueues: asynq's Queues, GetQueueInfo,
// DeleteAll{Pending,Scheduled,Retry}Tasks and DeleteQueue are redisq's
// ListQueues, Stats, Purge(StateScheduled) (every waiting job, due or not)
// and Destroy. asynq deletes
// only an empty queue unless forced; Destroy deletes a queue whatever it
// holds.
func TestFromAsynqInspectorQueues(t *testing.T) {
	r := newRig(t)

	r.enqueue(asynq.NewTask("job", nil), asynq.ProcessIn(time.Hour))
	r.enqueue(asynq.NewTask("job", nil), asynq.ProcessIn(time.Hour))
	if names, err := r.insp.Queues(); err != nil || !slices.Contains(names, r.name) {
		t.Errorf("asynq: Queues %v, %v; want %s among them", names, err, r.name)
	}
	if qi, err := r.insp.GetQueueInfo(r.name); err != nil || qi.Size != 2 || qi.Scheduled != 2 {
		t.Errorf("asynq: GetQueueInfo %+v, %v", qi, err)
	}
	if n, err := r.insp.DeleteAllScheduledTasks(r.name); err != nil || n != 2 {
		t.Errorf("asynq: DeleteAllScheduledTasks: %d, %v", n, err)
	}
	r.enqueue(asynq.NewTask("job", nil), asynq.ProcessIn(time.Hour))
	if err := r.insp.DeleteQueue(r.name, false); !errors.Is(err, asynq.ErrQueueNotEmpty) {
		t.Errorf("asynq: DeleteQueue of a queue with tasks: %v, want ErrQueueNotEmpty", err)
	}
	if err := r.insp.DeleteQueue(r.name, true); err != nil {
		t.Errorf("asynq: DeleteQueue forced: %v", err)
	}
	if names, err := r.insp.Queues(); err != nil || slices.Contains(names, r.name) {
		t.Errorf("asynq: Queues after DeleteQueue %v, %v", names, err)
	}

	q := r.queue("")
	for _, id := range []string{"a", "b"} {
		if _, err := q.EnqueueAfter(r.ctx, id, nil, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	if names, err := redisq.ListQueues(r.ctx, r.rc); err != nil || !slices.Contains(names, r.name) {
		t.Errorf("redisq: ListQueues %v, %v; want %s among them", names, err, r.name)
	}
	if st, err := q.Stats(r.ctx); err != nil || st.Scheduled != 2 || st.Enqueued != 2 {
		t.Errorf("redisq: Stats %+v, %v", st, err)
	}
	if n, err := q.Purge(r.ctx, redisq.StateScheduled); err != nil || n != 2 {
		t.Errorf("redisq: Purge(scheduled): %d, %v", n, err)
	}
	if _, err := q.EnqueueAfter(r.ctx, "c", nil, time.Hour); err != nil {
		t.Fatal(err)
	}
	if n, err := q.Destroy(r.ctx); err != nil || n == 0 {
		t.Errorf("redisq: Destroy: %d keys, %v", n, err)
	}
	if names, err := redisq.ListQueues(r.ctx, r.rc); err != nil || slices.Contains(names, r.name) {
		t.Errorf("redisq: ListQueues after Destroy %v, %v", names, err)
	}
	if ok, err := q.Exists(r.ctx); err != nil || ok {
		t.Errorf("redisq: Exists after Destroy: %v, %v", ok, err)
	}
}
