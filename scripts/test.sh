#!/usr/bin/env bash
# The project's test command (README, .ci/run): go test -race in every module
# of go.work. redisq's tests start their own redis-server, so it must be on
# PATH: run as root on Debian/Ubuntu, this installs it with apt-get when it
# is missing; otherwise it stops with one line saying what to run. Chromium,
# for dqweb's browser tests, is installed the same way when it can be;
# without it those tests skip, saying so.
# Arguments go to every go test (e.g. scripts/test.sh -short -count=1).
set -euo pipefail
cd "$(dirname "$0")/.."

# install CMD PACKAGE: install Debian's PACKAGE when CMD is missing, if we
# can (as root, with apt-get); fails if CMD is still missing.
install() {
  command -v "$1" >/dev/null 2>&1 && return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "scripts/test.sh: $1 is missing; installing Debian's $2"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2" >/dev/null || true
  fi
  command -v "$1" >/dev/null 2>&1
}

# redisq's tests need redis-server.
install redis-server redis-server || {
  echo "scripts/test.sh: redis-server is missing: run 'sudo apt-get install -y redis-server' (or this script as root), then again; 'go test -race ./...' tests the core alone" >&2
  exit 1
}
# dqweb's browser tests drive headless Chromium, and skip without it.
install chromium chromium || command -v chromium-browser >/dev/null 2>&1 ||
  echo "scripts/test.sh: no chromium: the dqweb browser tests will skip ('sudo apt-get install -y chromium' runs them)"

# The modules, from go.work.
mapfile -t modules < <(go work edit -json | sed -n 's/.*"DiskPath": "\(.*\)".*/\1/p')
for m in "${modules[@]}"; do
  echo "go test -race ./... ($m)"
  (cd "$m" && go test -race "$@" ./...)
done
