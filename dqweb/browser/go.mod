module github.com/dq-go/delayqueue/dqweb/browser

go 1.25.0

require (
	github.com/chromedp/cdproto v0.160.1
	github.com/chromedp/chromedp v0.23.1
	github.com/dq-go/delayqueue/dqweb v0.0.0-00010101000000-000000000000
	github.com/dq-go/delayqueue/redisq v0.0.0-00010101000000-000000000000
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/dq-go/delayqueue v0.0.0-00010101000000-000000000000 // indirect
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect
	github.com/redis/go-redis/v9 v9.22.0 // indirect
	github.com/robfig/cron/v3 v3.0.1 // indirect
	go.uber.org/atomic v1.11.0 // indirect
	go.uber.org/goleak v1.3.0 // indirect
	golang.org/x/sys v0.30.0 // indirect
)
