#!/usr/bin/env bash
# Installs the test tools (pinned) and runs every check: gofmt, go vet,
# staticcheck, go mod tidy -diff, the build of every package and example,
# and the race-enabled, shuffled test suite.
set -euo pipefail
cd "$(dirname "$0")/.."

STATICCHECK_VERSION=v0.8.2
BIN="$PWD/.bin"
mkdir -p "$BIN"
if ! "$BIN/staticcheck" -version 2>/dev/null | grep -q "(${STATICCHECK_VERSION#v})"; then
  echo "== installing staticcheck $STATICCHECK_VERSION"
  GOBIN="$BIN" go install "honnef.co/go/tools/cmd/staticcheck@$STATICCHECK_VERSION"
fi

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.bin/*'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi

echo "== go mod tidy -diff"
go mod tidy -diff

echo "== go vet"
go vet ./...

echo "== staticcheck"
"$BIN/staticcheck" ./...

echo "== go build (packages, commands, examples)"
go build ./...

echo "== go test -race -shuffle=on"
go test -race -shuffle=on -count=1 -timeout 20m ./...
