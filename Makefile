# The project's commands. `make test` is the test command the README gives
# and .ci/run calls: the core module, then the redisq module (which starts its
# own redis-server, so redis-server must be on PATH).

.PHONY: test vet bench-smoke example
test:
	go test -race ./...
	cd redisq && go test -race ./...

vet:
	@test -z "$$(gofmt -l .)" || { gofmt -l .; exit 1; }
	go vet ./...
	cd redisq && go vet ./...

# Every benchmark once, so they cannot rot.
bench-smoke:
	go test -run '^$$' -bench . -benchtime 1x ./...
	cd redisq && go test -run '^$$' -bench . -benchtime 1x ./...

example:
	go run ./examples/ordertimeout
