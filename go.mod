module github.com/dq-go/delayqueue

go 1.25

require (
	github.com/stretchr/testify v1.12.1 // indirect
	go.uber.org/goleak v1.3.0 // indirect
	golang.org/x/sys v0.45.0 // indirect
	pgregory.net/rapid v1.3.0 // indirect
)
