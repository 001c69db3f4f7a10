module github.com/dq-go/delayqueue/cmd

go 1.25.0

require (
	github.com/dq-go/delayqueue v0.0.0-00010101000000-000000000000
	github.com/dq-go/delayqueue/redisq v0.0.0-00010101000000-000000000000
	github.com/redis/go-redis/v9 v9.22.0
	golang.org/x/sys v0.45.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	go.uber.org/atomic v1.11.0 // indirect
)

replace (
	github.com/dq-go/delayqueue => ../
	github.com/dq-go/delayqueue/redisq => ../redisq
)
