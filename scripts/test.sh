#!/usr/bin/env bash
# The project's test command (README, .ci/run): go test -race in every module
# of go.work. redisq's tests start their own redis-server, so it must be on
# PATH: run as root on Debian/Ubuntu, this installs it with apt-get when it
# is missing; otherwise it stops with one line saying what to run.
# Arguments go to every go test (e.g. scripts/test.sh -short -count=1).
set -euo pipefail
cd "$(dirname "$0")/.."

# need CMD PACKAGE: install Debian's PACKAGE when CMD is missing, if we can.
need() {
  command -v "$1" >/dev/null 2>&1 && return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "scripts/test.sh: $1 is missing; installing Debian's $2"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2" >/dev/null
    command -v "$1" >/dev/null 2>&1 && return 0
  fi
  echo "scripts/test.sh: $1 is missing: run 'sudo apt-get install -y $2' (or this script as root), then again; 'go test -race ./...' tests the core alone" >&2
  exit 1
}
need redis-server redis-server

# The modules, from go.work.
mapfile -t modules < <(go work edit -json | sed -n 's/.*"DiskPath": "\(.*\)".*/\1/p')
for m in "${modules[@]}"; do
  echo "go test -race ./... ($m)"
  (cd "$m" && go test -race "$@" ./...)
done
