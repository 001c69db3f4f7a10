# The project's commands. `make test` is the test command the README gives
# and .ci/run calls: `go test -race ./...` in every module of the repository.
# redisq's tests (and the example's Redis test) start their own redis-server,
# so redis-server must be on PATH.
MODULES := . redisq dqprom examples cmd

.PHONY: test vet bench-smoke example chromium
test: chromium
	@set -e; for m in $(MODULES); do echo "go test -race ./... ($$m)"; (cd $$m && go test -race ./...); done

vet:
	@test -z "$$(gofmt -l .)" || { gofmt -l .; exit 1; }
	@set -e; for m in $(MODULES); do (cd $$m && go vet ./...); done

# cmd/dqweb's browser tests drive headless Chromium and skip without it:
# install it when missing (as root, with apt-get), else say how in one line.
chromium:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing chromium for the dqweb browser tests"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) || \
	  echo "could not install chromium: the dqweb browser tests will skip"; \
	else echo "no chromium: the dqweb browser tests will skip (sudo apt-get install -y chromium)"; fi

# Every benchmark once, so they cannot rot.
bench-smoke:
	@set -e; for m in $(MODULES); do (cd $$m && go test -run '^$$' -bench . -benchtime 1x ./...); done

example:
	go run ./examples/ordertimeout
