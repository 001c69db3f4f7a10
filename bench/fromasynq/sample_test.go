package fromasynq

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/dq-go/delayqueue/redisq"
	"github.com/hibiken/asynq"
)

// The code of the page's opening sample, as the page shows it but for the
// delay and the queue name, which the test gives.

const TypeWelcome = "email:welcome"

type Welcome struct {
	User int64 `json:"user"`
}

// asynq: a task, a handler, a server.

func asynqEnqueueWelcome(client *asynq.Client, queue string, in time.Duration) error {
	payload, err := json.Marshal(Welcome{User: 42})
	if err != nil {
		return err
	}
	_, err = client.Enqueue(asynq.NewTask(TypeWelcome, payload),
		asynq.Queue(queue), asynq.TaskID("welcome:42"), asynq.ProcessIn(in), asynq.MaxRetry(4))
	return err
}

func asynqWelcomeMux(send func(ctx context.Context, user int64) error) *asynq.ServeMux {
	mux := asynq.NewServeMux()
	mux.HandleFunc(TypeWelcome, func(ctx context.Context, t *asynq.Task) error {
		var w Welcome
		if err := json.Unmarshal(t.Payload(), &w); err != nil {
			return fmt.Errorf("%v: %w", err, asynq.SkipRetry)
		}
		return send(ctx, w.User)
	})
	return mux
}

// redisq: a kind, a handler, a worker.

var welcome = redisq.JobKind[Welcome]{Name: TypeWelcome}

func redisqEnqueueWelcome(ctx context.Context, q *redisq.Queue, in time.Duration) error {
	_, err := welcome.EnqueueAfter(ctx, q, "welcome:42", Welcome{User: 42}, in, redisq.MaxAttempts(5))
	return err
}

func redisqWelcomeMux(send func(ctx context.Context, user int64) error) *redisq.Mux {
	mux := redisq.NewMux()
	welcome.Handle(mux, func(ctx context.Context, m *redisq.Message, w Welcome) error {
		return send(ctx, w.User)
	})
	return mux
}

// TestFromAsynqSample runs the page's opening sample: both deliver the
// typed payload and delete the job once handled; a payload that does not
// decode is archived (asynq: the sample's SkipRetry) or dead (redisq: what
// JobKind.Handle does by itself) after one run.
func TestFromAsynqSample(t *testing.T) {
	r := newRig(t)
	users := make(chan int64, 10)
	send := func(_ context.Context, user int64) error { users <- user; return nil }

	// asynq
	if err := asynqEnqueueWelcome(r.ac, r.name, 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	r.asynqServer(asynqWelcomeMux(send), nil)
	if got := recv(r, users, "asynq's welcome"); got != 42 {
		t.Fatalf("asynq handler got user %d, want 42", got)
	}
	r.asynqGone("welcome:42")
	r.enqueue(asynq.NewTask(TypeWelcome, []byte("not json")), asynq.TaskID("bad"))
	if info := r.asynqState("bad", asynq.TaskStateArchived); info.Retried != 0 {
		t.Errorf("asynq: undecodable payload retried %d times before the archive, want 0", info.Retried)
	}

	// redisq
	q := r.queue("")
	if err := redisqEnqueueWelcome(r.ctx, q, 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	r.worker(q, redisqWelcomeMux(send).Serve, redisq.WorkerOptions{})
	if got := recv(r, users, "redisq's welcome"); got != 42 {
		t.Fatalf("redisq handler got user %d, want 42", got)
	}
	r.redisqGone(q, "welcome:42")
	if _, err := q.Add(r.ctx, redisq.EnqueueItem{ID: "bad", Payload: []byte("not json"), Job: redisq.Job{Kind: TypeWelcome}}); err != nil {
		t.Fatal(err)
	}
	if it := r.redisqState(q, "bad", redisq.StateDead); it.Attempts != 1 {
		t.Errorf("redisq: undecodable payload dead after %d attempts, want 1", it.Attempts)
	}
	if len(users) != 0 {
		t.Errorf("an undecodable payload reached send: %d calls", len(users))
	}
}
