module github.com/dq-go/delayqueue/examples

go 1.25

require github.com/dq-go/delayqueue v0.0.0-00010101000000-000000000000

replace github.com/dq-go/delayqueue => ../
