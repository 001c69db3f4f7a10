module github.com/dq-go/delayqueue/bench

go 1.25.0

require (
	github.com/dq-go/delayqueue v0.0.0-00010101000000-000000000000
	github.com/dq-go/delayqueue/redisq v0.0.0-00010101000000-000000000000
	github.com/hibiken/asynq v0.26.0
	github.com/redis/go-redis/v9 v9.22.0
	go.uber.org/goleak v1.3.0
	golang.org/x/sys v0.45.0
	golang.org/x/time v0.14.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/robfig/cron/v3 v3.0.1 // indirect
	github.com/spf13/cast v1.10.0 // indirect
	go.uber.org/atomic v1.11.0 // indirect
	google.golang.org/protobuf v1.36.10 // indirect
)
