package fromasynq

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/dq-go/delayqueue/redisq"
	"github.com/hibiken/asynq"
)

// fillAsynq enqueues n tasks in each of the asynq queues names, ids
// "<name>-<i>", the queue's name as payload.
func (r *rig) fillAsynq(n int, names ...string) {
	for _, name := range names {
		for i := range n {
			r.enqueue(asynq.NewTask("job", []byte(name)), asynq.Queue(name), asynq.TaskID(fmt.Sprint(name, "-", i)))
		}
	}
}

// fillRedisq is fillAsynq for redisq.
func (r *rig) fillRedisq(n int, qs ...*redisq.Queue) {
	for _, q := range qs {
		for i := range n {
			// Due a second ago: every one is due when the worker starts (one
			// due "now" is due at the next millisecond).
			if _, err := q.Add(r.ctx, redisq.EnqueueItem{ID: fmt.Sprint(q.Name(), "-", i), Payload: []byte(q.Name()), At: time.Now().Add(-time.Second)}); err != nil {
				r.t.Fatal(err)
			}
		}
	}
}

// TestFromAsynqWeightedQueues: asynq's Config.Queues weights are redisq's
// WorkerQueue.Weight (NewMultiWorker). asynq draws the queue at random for
// each task, in proportion to the weights, so the shares hold on average;
// redisq shares the claims by smooth weighted round robin, so they hold
// over every stretch of claims: with weights 2 and 1, any 3 consecutive
// claims are 2 and 1.
func TestFromAsynqWeightedQueues(t *testing.T) {
	r := newRig(t)
	high, low := r.sub("high"), r.sub("low")
	const n = 30
	order := make(chan string, 4*n)

	r.fillAsynq(n, high, low)
	r.asynqServer(asynq.HandlerFunc(func(_ context.Context, task *asynq.Task) error {
		order <- string(task.Payload())
		return nil
	}), func(c *asynq.Config) {
		c.Concurrency = 1
		c.Queues = map[string]int{high: 2, low: 1}
	})
	got := 0
	for range n {
		if recv(r, order, "asynq's tasks") == high {
			got++
		}
	}
	// 2/3 of 30 is 20; a binomial draw is within 10 of it but for odds of
	// about 1 in 100,000.
	if got < 10 || got == n {
		t.Errorf("asynq: %d of the first %d tasks from the queue of weight 2, want about %d", got, n, 2*n/3)
	}
	for range n {
		recv(r, order, "asynq's other tasks")
	}

	qh, ql := r.queue(high), r.queue(low)
	r.fillRedisq(n, qh, ql)
	r.run(redisq.NewMultiWorker(func(_ context.Context, m *redisq.Message) error {
		order <- string(m.Payload)
		return nil
	}, redisq.WorkerOptions{Concurrency: 1}, redisq.WorkerQueue{Queue: qh, Weight: 2}, redisq.WorkerQueue{Queue: ql, Weight: 1}))
	var seq []string
	for range n {
		seq = append(seq, recv(r, order, "redisq's items"))
	}
	for i := 0; i+3 <= n; i++ {
		h := 0
		for _, s := range seq[i : i+3] {
			if s == high {
				h++
			}
		}
		if h != 2 {
			t.Fatalf("redisq: claims %d to %d take %d from the queue of weight 2, want 2 (%v)", i, i+2, h, seq)
		}
	}
}

// TestFromAsynqStrictPriority: asynq's StrictPriority is redisq's
// WorkerOptions.StrictPriority: a queue's work is taken only while no queue
// before it has any. asynq orders the queues by weight, redisq by their
// order in NewMultiWorker.
func TestFromAsynqStrictPriority(t *testing.T) {
	r := newRig(t)
	high, low := r.sub("high"), r.sub("low")
	const n = 10
	order := make(chan string, 4*n)
	check := func(who string) {
		t.Helper()
		for i := range 2 * n {
			want := high
			if i >= n {
				want = low
			}
			if got := recv(r, order, who+"'s jobs"); got != want {
				t.Fatalf("%s: job %d from %s, want %s", who, i, got, want)
			}
		}
	}

	r.fillAsynq(n, low, high)
	r.asynqServer(asynq.HandlerFunc(func(_ context.Context, task *asynq.Task) error {
		order <- string(task.Payload())
		return nil
	}), func(c *asynq.Config) {
		c.Concurrency = 1
		c.StrictPriority = true
		c.Queues = map[string]int{high: 2, low: 1}
	})
	check("asynq")

	qh, ql := r.queue(high), r.queue(low)
	r.fillRedisq(n, ql, qh)
	r.run(redisq.NewMultiWorker(func(_ context.Context, m *redisq.Message) error {
		order <- string(m.Payload)
		return nil
	}, redisq.WorkerOptions{Concurrency: 1, StrictPriority: true}, redisq.WorkerQueue{Queue: qh}, redisq.WorkerQueue{Queue: ql}))
	check("redisq")
}
