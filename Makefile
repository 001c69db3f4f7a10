# The project's commands. `make test` is the test command the README gives
# and .ci/run calls: `go test -race ./...` in every module of the repository.
# redisq's tests (and the example's Redis test) start their own redis-server,
# so redis-server must be on PATH.
MODULES := . redisq dqprom examples cmd

.PHONY: test vet bench-smoke example
test:
	@set -e; for m in $(MODULES); do echo "go test -race ./... ($$m)"; (cd $$m && go test -race ./...); done

vet:
	@test -z "$$(gofmt -l .)" || { gofmt -l .; exit 1; }
	@set -e; for m in $(MODULES); do (cd $$m && go vet ./...); done

# Every benchmark once, so they cannot rot.
bench-smoke:
	@set -e; for m in $(MODULES); do (cd $$m && go test -run '^$$' -bench . -benchtime 1x ./...); done

example:
	go run ./examples/ordertimeout
