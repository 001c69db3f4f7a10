package redisq_test

import (
	"context"
	"fmt"
	"time"

	"github.com/dq-go/delayqueue/redisq"
	"github.com/redis/go-redis/v9"
)

// A queue spread over three partitions, so that on a Redis Cluster three
// masters share its work. Items that must stay in order share an ordering
// key; the others go to the partition of their id.
func ExamplePartitioned() {
	addr, stop := redisq.StartTestServer()
	defer stop()
	c := redis.NewClient(&redis.Options{Addr: addr}) // or redis.NewClusterClient
	defer c.Close()
	ctx := context.Background()

	q, err := redisq.NewPartitioned(ctx, c, "emails", 3)
	if err != nil {
		panic(err)
	}
	defer q.Close()

	// One user's emails, in order: the partition of the key "user:42".
	user := q.Route("user:42")
	_, _ = user.EnqueueAfter(ctx, "welcome:42", []byte("welcome"), 0)
	_, _ = user.EnqueueAfter(ctx, "tips:42", []byte("tips"), 0)
	// An item of its own: the partition of its id.
	_, _ = q.EnqueueAfter(ctx, "receipt:7", []byte("receipt"), time.Hour)

	var done *redisq.Message
	for range 2 {
		m, err := q.AckTake(ctx, done) // from whichever partition is due first
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s (partition %d)\n", m.Payload, q.PartitionOfMessage(m))
		done = m
	}
	_ = done.Ack(ctx)
	st, _ := q.Stats(ctx) // all partitions added up
	fmt.Println("acked", st.Acked, "scheduled", st.Scheduled)
	fmt.Println(q.Route("receipt:7").Name(), "holds receipt:7")
	// Output:
	// welcome (partition 2)
	// tips (partition 2)
	// acked 2 scheduled 1
	// emails~1.3 holds receipt:7
}

// The partitions of a queue are ordinary queues whose names put them in
// different Cluster slots, spread evenly over the slot space.
func ExamplePartitionLayout() {
	fmt.Println(redisq.PartitionLayout("emails", 3))
	// Output: [emails~0.2 emails~1.3 emails~2.2]
}
