module github.com/dq-go/delayqueue/cmd

go 1.25.0

require (
	github.com/dq-go/delayqueue/dqprom v0.0.0-00010101000000-000000000000
	github.com/dq-go/delayqueue/dqweb v0.0.0-00010101000000-000000000000
	github.com/dq-go/delayqueue/redisq v0.0.0-00010101000000-000000000000
	github.com/prometheus/client_golang v1.23.2
	github.com/redis/go-redis/v9 v9.22.0
	go.uber.org/goleak v1.3.0
	golang.org/x/sys v0.45.0
)

require (
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/dq-go/delayqueue v0.0.0-00010101000000-000000000000 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/prometheus/client_model v0.6.2 // indirect
	github.com/prometheus/common v0.66.1 // indirect
	github.com/prometheus/procfs v0.16.1 // indirect
	github.com/robfig/cron/v3 v3.0.1 // indirect
	go.uber.org/atomic v1.11.0 // indirect
	go.yaml.in/yaml/v2 v2.4.2 // indirect
	google.golang.org/protobuf v1.36.10 // indirect
)
