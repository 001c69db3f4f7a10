module github.com/dq-go/delayqueue

go 1.25.0

require golang.org/x/sys v0.45.0

require (
	github.com/stretchr/testify v1.12.1 // indirect
	go.uber.org/goleak v1.3.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	pgregory.net/rapid v1.3.0 // indirect
)
