#!/usr/bin/env bash
# go mod tidy for the modules of go.work (all of them, or those named):
#
#   scripts/tidy.sh              # every module
#   scripts/tidy.sh cmd dqprom   # these
#
# go mod tidy ignores go.work, so in a module that requires another module
# of this repository it would fetch that module at the required version,
# which on main is the placeholder v0.0.0-00010101000000-000000000000 that
# only go.work resolves (docs/release.md). This runs it with GOWORK=off and,
# for the duration, a replace of every other module of go.work by its
# directory; the replaces are dropped again however tidy ends.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

mapfile -t modules < <(go work edit -json | sed -n 's/.*"DiskPath": "\(.*\)".*/\1/p')
[ $# -gt 0 ] && modules=("$@")
declare -A paths # module directory -> module path, for every module of go.work
while read -r dir; do
  paths[$dir]=$(go mod edit -json "$dir/go.mod" | sed -n '/"Module"/,/}/s/.*"Path": "\(.*\)".*/\1/p')
done < <(go work edit -json | sed -n 's/.*"DiskPath": "\(.*\)".*/\1/p')

for m in "${modules[@]}"; do
  m=${m%/}
  [ -n "${paths[$m]:-}" ] || [ -n "${paths[./$m]:-}" ] || {
    echo "scripts/tidy.sh: $m is not a module of go.work" >&2
    exit 2
  }
  [ -n "${paths[$m]:-}" ] || m=./$m
  if go mod edit -json "$m/go.mod" | grep -q '"Replace": \['; then
    echo "scripts/tidy.sh: $m/go.mod has replace directives, which go.work makes unneeded (docs/release.md): remove them first" >&2
    exit 2
  fi
  replace=() drop=()
  for d in "${!paths[@]}"; do
    [ "$d" = "$m" ] && continue
    dir=$root/${d#./}
    replace+=("-replace=${paths[$d]}=${dir%/.}")
    drop+=("-dropreplace=${paths[$d]}")
  done
  echo "go mod tidy ($m)"
  trap 'go mod edit "${drop[@]}" "$m/go.mod"' EXIT
  go mod edit "${replace[@]}" "$m/go.mod"
  (cd "$m" && GOWORK=off go mod tidy)
  go mod edit "${drop[@]}" "$m/go.mod"
  trap - EXIT
done
