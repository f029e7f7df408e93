#!/bin/sh
# Runs every check and test of pace: the command CI runs (.ci/run).
set -eu
cd "$(dirname "$0")/.."

step() { printf '==> %s\n' "$*"; }

if ! command -v redis-server >/dev/null 2>&1; then
	if [ "${CI:-}" = "true" ]; then
		echo "scripts/test.sh: redis-server not found; CI needs it (apt-get install redis-server)" >&2
		exit 1
	fi
	echo "scripts/test.sh: redis-server not found: the Redis tests will be skipped." >&2
	echo "  install it with: sudo apt-get install redis-server   (macOS: brew install redis)" >&2
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
go test -race -count=1 "$@" ./...
