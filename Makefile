# The project's commands. The test command the README gives, and .ci/run
# calls, is scripts/test.sh (go test -race in every module; it installs
# redis-server when it can); `make test` runs it too.

MODULES := . redisq dqprom otelq dqweb dqweb/browser examples cmd bench

.PHONY: test vet bench-smoke example
test:
	@./scripts/test.sh

vet:
	@test -z "$$(gofmt -l .)" || { gofmt -l .; exit 1; }
	@set -e; for m in $(MODULES); do (cd $$m && go vet ./...); done

# Every benchmark once, so they cannot rot.
bench-smoke:
	@set -e; for m in $(MODULES); do (cd $$m && go test -run '^$$' -bench . -benchtime 1x ./...); done

example:
	go run ./examples/ordertimeout
