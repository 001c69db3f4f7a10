#!/usr/bin/env bash
# Proves that every module installs and imports as it will once tagged
# (docs/release.md): it releases the work tree at a made-up version into a
# local module proxy, then installs the commands and builds a user's module
# from that proxy, without go.work, as users do.
#
#   scripts/release-check.sh            # CI runs it (.ci/run)
#
# In a temporary directory, it
#  1. copies the files git would commit (tracked, or new and not ignored);
#  2. in tag order, for each module: requires the repository's modules
#     released before it at the version (go mod edit -require), runs
#     go mod tidy, and publishes the module into a file:// module proxy
#     (scripts/modproxy), as the release procedure tags it;
#  3. in an empty directory: go install PKG@VERSION of every command of
#     every module, and a new module that imports every public package
#     builds (go mod init; go get MODULE@VERSION...; go build);
#  4. a new module that imports only dqweb builds, and its go.sum, once
#     tidied, names neither asynq nor chromedp or cdproto: mounting the
#     dashboard needs only redisq, dqprom's dependencies and the standard
#     library (issue 25);
#  5. a new module that imports only redisq builds, and its go.sum, once
#     tidied, names no go.opentelemetry.io module: tracing is otelq's, a
#     module of its own, so that redisq does not depend on OpenTelemetry.
# It fails too when a go.mod has a replace or exclude directive, which
# `go install PKG@VERSION` refuses (it says so on stderr first, then goes on
# to show what a user would see).
#
# The go command runs with GOWORK=off and GOPROXY=file://<the local
# proxy>,$(go env GOPROXY), and uses your module cache, so that the
# dependencies come from it and compile once: the made-up version,
# v0.0.0-releasecheck.<time>.<pid>, is new on each run, and its files are
# deleted from the module cache at exit. The checksum database is not asked
# about it (GONOSUMDB). Needs git, Go, and the module proxy for what the
# module cache lacks.
set -euo pipefail
cd "$(dirname "$0")/.."

# The tag order: a module comes after every module of the repository it
# requires. docs/release.md gives the same order.
order=(. redisq dqprom otelq dqweb examples cmd bench)
# The modules of go.work that are never tagged: test modules no one
# imports (dqweb/browser holds the dashboard's browser tests, so that dqweb
# requires no chromedp). The copy keeps them; each released module's zip
# leaves them out, as nested modules (scripts/modproxy).
unreleased=(dqweb/browser)
version=v0.0.0-releasecheck.$(date +%s).$$

fail() {
  echo "release-check: $*" >&2
  exit 1
}

# Every module of go.work has its place in the order, or is unreleased.
mapfile -t work < <(go work edit -json | sed -n 's/.*"DiskPath": "\(.*\)".*/\1/p' | sed 's#^\./##; s#^$#.#' | sort)
[ "$(printf '%s\n' "${work[@]}")" = "$(printf '%s\n' "${order[@]}" "${unreleased[@]}" | sort)" ] ||
  fail "go.work's modules (${work[*]}) are not those of the tag order here (${order[*]}) and the unreleased ones (${unreleased[*]}): update scripts/release-check.sh and docs/release.md"

replaced=()
for m in "${order[@]}" "${unreleased[@]}"; do
  if go mod edit -json "$m/go.mod" | grep -Eq '"(Replace|Exclude)": \['; then
    replaced+=("$m/go.mod")
  fi
done
[ ${#replaced[@]} -eq 0 ] ||
  echo "release-check: replace or exclude directives in ${replaced[*]}: go.work is for development (docs/release.md); the check goes on to show what a user would see" >&2

git rev-parse --is-inside-work-tree >/dev/null || fail "needs a git work tree, to know which files a release holds"
cache=$(go env GOMODCACHE)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/release-check.XXXXXX")
released=() # module paths, in tag order

# cleanup deletes the temporary directory and the made-up version from the
# module cache: each module as extracted, as downloaded, and in the list of
# downloaded versions.
cleanup() {
  rm -rf "$tmp"
  local i p v
  for ((i = ${#released[@]} - 1; i >= 0; i--)); do # nested modules first
    p=${released[i]} v=$cache/cache/download/${released[i]}/@v
    rm -rf "$cache/$p@$version" "$v/$version".*
    if [ -f "$v/list" ]; then
      grep -vxF "$version" "$v/list" >"$v/list.new" || true
      if [ -s "$v/list.new" ]; then mv "$v/list.new" "$v/list"; else rm -f "$v/list" "$v/list.new"; fi
    fi
    rmdir "$v" "${v%/@v}" 2>/dev/null || true
  done
  rmdir "$cache/github.com/dq-go/delayqueue" "$cache/github.com/dq-go" "$cache/cache/download/github.com/dq-go" 2>/dev/null || true
}
trap cleanup EXIT

# quietly WHY CMD...: runs CMD, its output kept in a log that is shown, with
# "WHY failed", only when CMD fails.
quietly() {
  local why=$1
  shift
  "$@" >"$tmp/log" 2>&1 || {
    cat "$tmp/log" >&2
    fail "$why failed: see above, and docs/release.md"
  }
}

go build -o "$tmp/modproxy" ./scripts/modproxy

echo "--- release-check: copy the work tree"
while IFS= read -r -d '' f; do
  [ -e "$f" ] || continue # deleted in the work tree
  mkdir -p "$tmp/src/$(dirname "$f")"
  cp -p "$f" "$tmp/src/$f"
done < <(git ls-files -z --cached --others --exclude-standard)

export GOPROXY="file://$tmp/proxy,$(go env GOPROXY)"
export GOFLAGS="$(go env GOFLAGS) -modcacherw"
export GOWORK=off GOBIN="$tmp/bin" GOPRIVATE= GONOPROXY=
export GONOSUMDB="$(go -C "$tmp/src" list -m)"

commands=() # PKG@VERSION, one go install each
packages=() # importable packages of every module
for m in "${order[@]}"; do
  dir="$tmp/src/$m"
  path=$(go -C "$dir" list -m)
  echo "--- release-check: release $path@$version"
  for dep in "${released[@]}"; do
    if go -C "$dir" mod edit -json | grep -q "\"Path\": \"$dep\""; then
      go -C "$dir" mod edit -require="$dep@$version"
    fi
  done
  quietly "go mod tidy in $m (the modules before it released at $version)" go -C "$dir" mod tidy
  released+=("$path")
  "$tmp/modproxy" -proxy "$tmp/proxy" -version "$version" "$dir" >/dev/null
  while read -r name pkg; do
    case "$pkg" in */internal | */internal/*) continue ;; esac
    if [ "$name" = main ]; then
      commands+=("$pkg@$version")
    else
      packages+=("$pkg")
    fi
  done < <(go -C "$dir" list -f '{{.Name}} {{.ImportPath}}' ./...)
done

mkdir "$tmp/user"
cd "$tmp/user"
for c in "${commands[@]}"; do
  echo "--- release-check: go install $c"
  quietly "go install $c" go install "$c"
done

echo "--- release-check: a new module importing ${packages[*]}"
go mod init example.com/releasecheck >/dev/null 2>&1
{
  echo 'package main'
  echo 'import ('
  printf '\t_ "%s"\n' "${packages[@]}"
  echo ')'
  echo 'func main() {}'
} >main.go
quietly "go get ${released[*]/%/@$version}" go get "${released[@]/%/@$version}"
quietly "go build of a module importing ${packages[*]}" go build ./...

# What a service that mounts the dashboard gets: module graph pruning
# leaves out what dqweb's requirements require, but go mod tidy still
# writes into its go.sum every module dqweb's go.mod requires, even one
# only dqweb's tests use (the browser tests' chromedp, which live in the
# module dqweb/browser for that reason). go get and go build alone write
# less, and would not see it.
# sole_user DIR PATTERN WHY: a new module that imports only the module in
# DIR of the release gets, after go get, go build and go mod tidy, no line
# of its go.sum matching the extended regexp PATTERN; WHY says why not.
sole_user() {
  local mod
  mod=$(go -C "$tmp/src/$1" list -m)
  echo "--- release-check: a new module importing only $mod: no $2 in its tidy go.sum"
  mkdir "$tmp/$1-user"
  cd "$tmp/$1-user"
  go mod init "example.com/$1only" >/dev/null 2>&1
  printf 'package main\n\nimport _ "%s"\n\nfunc main() {}\n' "$mod" >main.go
  quietly "go get $mod@$version" go get "$mod@$version"
  quietly "go build of a module importing $mod" go build ./...
  quietly "go mod tidy in a module importing $mod" go mod tidy
  if unwanted=$(grep -E "$2" go.sum); then
    echo "$unwanted" >&2
    fail "a module importing only $mod has the lines above in its go.sum: $3"
  fi
}
sole_user dqweb 'asynq|chromedp|cdproto' "dqweb's go.mod must not require asynq, chromedp or cdproto, even for tests (issue 25; the browser tests live in the module dqweb/browser)"
# The same for redisq and OpenTelemetry: only otelq's users get it.
sole_user redisq 'go\.opentelemetry\.io' "redisq's go.mod must not require OpenTelemetry, even for tests (tracing is the module otelq's)"

[ ${#replaced[@]} -eq 0 ] || fail "replace or exclude directives in ${replaced[*]}: remove them (docs/release.md)"
echo "release-check: ok (${#released[@]} modules released, ${#commands[@]} commands installed, ${#packages[@]} packages imported)"
