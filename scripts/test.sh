#!/bin/sh
# Runs every check and test of pace: the command CI runs (.ci/run).
set -eu
cd "$(dirname "$0")/.."

step() { printf '==> %s\n' "$*"; }

# Tests that skip themselves for want of a program say so only with -v;
# each such program is named here, and again once the tests have run.
skipped=""
skip() { skipped="$skipped  $1 not found: $2; install $1 to run them
"; }
trap 'if [ -n "$skipped" ]; then printf "scripts/test.sh: tests skipped:\n%s" "$skipped" >&2; fi' EXIT

if ! command -v redis-server >/dev/null 2>&1; then
	if [ "${CI:-}" = "true" ]; then
		echo "scripts/test.sh: redis-server not found; CI needs it (apt-get install redis-server)" >&2
		exit 1
	fi
	echo "scripts/test.sh: redis-server not found: the Redis tests will be skipped." >&2
	echo "  install it with: sudo apt-get install redis-server   (macOS: brew install redis)" >&2
	skip redis-server "the Redis tests (throttle/redisrate, cmd's redis_* and quota_redis scripts)"
fi
if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1 && [ ! -x /usr/bin/chromium ]; then
	skip chromium "internal/plot's TestChromium (the SVG displayed in a browser)"
fi
if ! command -v curl >/dev/null 2>&1; then
	skip curl "cmd's scripts that run pace run -- curl"
fi

step "gofmt"
unformatted=$(gofmt -l $(find . -name '*.go' -not -path './.git/*'))
if [ -n "$unformatted" ]; then
	echo "gofmt would change:" >&2
	echo "$unformatted" >&2
	exit 1
fi

step "go mod tidy"
if ! go mod tidy -diff >/dev/null 2>&1; then
	echo "go.mod/go.sum are not tidy; run 'go mod tidy':" >&2
	go mod tidy -diff >&2 || true
	exit 1
fi

step "go vet"
go vet ./...

step "staticcheck"
# Pinned by go.mod's tool directive. The one exception in the code is a
# //lint:ignore with its reason (grep lint:ignore).
go tool staticcheck ./...

step "cross-compile (darwin, windows)"
for os in darwin windows; do
	GOOS=$os GOARCH=amd64 go build -o /dev/null ./...
done

step "go test -race"
# Most of cmd's tests wait on real time (rate-limited runs, signals, a
# strict server), not on a CPU: four at a time instead of GOMAXPROCS (2
# here) takes cmd from about 93s to 58s on the 2-core machine, and every
# test checks invariants with tolerances that hold under that load (tried
# beside another test session: load 3).
# A race-enabled binary sleeps 1s as it exits (GORACE's atexit_sleep_ms,
# 1000 by default, time for a race at exit to be reported): a second for
# each of some 50 test binaries, two at a time, and for each helper
# process a test starts from its own binary. A race found while the tests
# run is reported as it is found.
GORACE="${GORACE:-atexit_sleep_ms=0}" go test -race -count=1 -parallel 4 "$@" ./...
