#!/usr/bin/env bash
# Installs the test tools (pinned), starts a throwaway PostgreSQL on
# 127.0.0.1 (installing it with apt when missing) unless
# AGENTRT_TEST_POSTGRES names one, and runs every check: gofmt, go vet,
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

echo "== MCP reference servers (npm, into testdata/mcp)"
if [ "$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "installing nodejs and npm"
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq nodejs npm >/dev/null
fi
if ! command -v curl >/dev/null 2>&1; then
  echo "installing curl (the server's tests resume streams with it)"
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq curl >/dev/null
fi
if ! command -v chromium >/dev/null 2>&1; then
  echo "installing chromium (the server's browser tests drive it headless; a few minutes)"
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends chromium >/dev/null
fi
MCPN=testdata/mcp/node_modules/@modelcontextprotocol
if [ ! -f $MCPN/server-everything/dist/index.js ] || [ ! -f $MCPN/server-filesystem/dist/index.js ] || [ ! -f $MCPN/server-memory/dist/index.js ]; then
  npm install --silent --no-audit --no-fund --prefix testdata/mcp \
    @modelcontextprotocol/server-everything@2026.8.31 \
    @modelcontextprotocol/server-filesystem@2026.8.31 \
    @modelcontextprotocol/server-memory@2026.8.31
fi

echo "== Node clients of agentrt serve (npm, into testdata/node, from its package-lock.json)"
# eventsource 5.x declares Node 22 in its engines; it runs on Debian's Node 20.
if [ "$(node -p 'require("./testdata/node/node_modules/eventsource/package.json").version' 2>/dev/null)" != \
  "$(node -p 'require("./testdata/node/package.json").dependencies.eventsource')" ]; then
  npm ci --silent --no-audit --no-fund --prefix testdata/node
fi

echo "== postgres (a throwaway cluster on 127.0.0.1 for the tests)"
if [ -z "${AGENTRT_TEST_POSTGRES:-}" ]; then
  if ! ls -d /usr/lib/postgresql/*/bin >/dev/null 2>&1; then
    echo "installing postgresql"
    if [ "$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi
    $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq postgresql >/dev/null
  fi
  PGBIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
  PGDATA=$(mktemp -d /tmp/agentrt-pgtest.XXXXXX)
  AS=()
  if [ "$(id -u)" = 0 ]; then
    chown postgres:postgres "$PGDATA"
    AS=(runuser -u postgres --)
  fi
  chmod 700 "$PGDATA"
  "${AS[@]}" "$PGBIN/initdb" -D "$PGDATA" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >/dev/null
  stop_pg() { "${AS[@]}" "$PGBIN/pg_ctl" -D "$PGDATA" -m immediate stop >/dev/null 2>&1 || true; rm -rf "$PGDATA"; }
  trap stop_pg EXIT
  # A free port: try a few at random (another cluster may hold one).
  started=
  for _ in 1 2 3 4 5 6 7 8; do
    PGPORT=$(( 55000 + RANDOM % 900 ))
    if (exec 3<>"/dev/tcp/127.0.0.1/$PGPORT") 2>/dev/null; then continue; fi
    if "${AS[@]}" "$PGBIN/pg_ctl" -D "$PGDATA" -l "$PGDATA/server.log" -w -t 60 \
      -o "-c listen_addresses=127.0.0.1 -p $PGPORT -k $PGDATA -c fsync=off -c synchronous_commit=off -c max_connections=500" start >/dev/null; then
      started=1
      break
    fi
  done
  if [ -z "$started" ]; then
    echo "could not start PostgreSQL; its log:"; cat "$PGDATA/server.log"; exit 1
  fi
  "$PGBIN/createdb" -h 127.0.0.1 -p "$PGPORT" -U postgres agentrt_test
  export AGENTRT_TEST_POSTGRES="postgres://postgres@127.0.0.1:$PGPORT/agentrt_test?sslmode=disable"
fi
echo "AGENTRT_TEST_POSTGRES=$AGENTRT_TEST_POSTGRES"
# Tests that need Postgres fail rather than skip when it is missing.
export CI=${CI:-1}

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

echo "== the patched MCP SDK (third_party/go-sdk/PATCH.md)"
(cd third_party/go-sdk && go vet ./internal/json/ && go test -race -count=1 ./internal/json/)
