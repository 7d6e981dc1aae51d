#!/usr/bin/env bash
# Installs the test tools (pinned), starts a throwaway PostgreSQL on
# 127.0.0.1 (installing it with apt when missing) unless
# AGENTRT_TEST_POSTGRES names one, builds the Temporal CLI (its dev server
# is started by the temporal module's tests), and runs every check:
# gofmt, go vet, staticcheck, go mod tidy -diff, the build of every
# package and example, and the race-enabled, shuffled test suite, of the
# main module and of the temporal module.
#
# It ends with one verdict line, whatever happened: "make test: ok: N
# passed, 0 failed, K skipped, in P packages (0 failed)", or "make test:
# FAILED: …" naming the step or the tests that failed. The tests' output
# is what go test prints without -v, and the whole output of every test
# that fails (internal/testreport).
set -euo pipefail
cd "$(dirname "$0")/.."

BIN="$PWD/.bin"
mkdir -p "$BIN"

# The verdict: each step says its name; the exit trap reports the one that
# failed (if any) with what the tests came to, as the last line.
STEP=
REPORT_STATE=$(mktemp /tmp/agentrt-testreport.XXXXXX)
CLEANUPS=()
step() { STEP=$1; echo "== $1"; }
on_exit() {
  local rc=$? failed=
  for c in "${CLEANUPS[@]}"; do "$c" || true; done
  if [ "$rc" != 0 ]; then failed=$STEP; fi
  if [ -x "$BIN/testreport" ]; then
    "$BIN/testreport" -verdict -state "$REPORT_STATE" -step "$failed" || echo "make test: FAILED: $failed failed"
  elif [ "$rc" != 0 ]; then
    echo "make test: FAILED: no tests ran; $failed failed"
  fi
  rm -f "$REPORT_STATE"
  exit "$rc"
}
trap on_exit EXIT
step "build the test report (internal/testreport)"
go build -o "$BIN/testreport" ./internal/testreport

STATICCHECK_VERSION=v0.8.2
if ! "$BIN/staticcheck" -version 2>/dev/null | grep -q "(${STATICCHECK_VERSION#v})"; then
  step "install staticcheck $STATICCHECK_VERSION"
  GOBIN="$BIN" go install "honnef.co/go/tools/cmd/staticcheck@$STATICCHECK_VERSION"
fi

step "MCP reference servers (npm, into testdata/mcp)"
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

step "Node clients of agentrt serve (npm, into testdata/node, from its package-lock.json)"
# eventsource 5.x declares Node 22 in its engines; it runs on Debian's Node 20.
# Installed again unless every dependency is there at its pinned version.
if ! node -e '
  const deps = require("./testdata/node/package.json").dependencies;
  for (const [name, want] of Object.entries(deps)) {
    if (require("./testdata/node/node_modules/" + name + "/package.json").version !== want) process.exit(1);
  }' 2>/dev/null; then
  npm ci --silent --no-audit --no-fund --prefix testdata/node
fi

step "postgres (a throwaway cluster on 127.0.0.1 for the tests)"
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
  CLEANUPS+=(stop_pg)
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

step "the Temporal CLI (its dev server, for the temporal module's tests)"
# Built with go install, pinned, and kept outside the clone: the first
# build takes minutes, later ones none.
TEMPORAL_CLI_VERSION=v1.5.1
TEMPORAL_DIR="${XDG_CACHE_HOME:-$HOME/.cache}/agentrt/temporal-cli-$TEMPORAL_CLI_VERSION"
if [ ! -x "$TEMPORAL_DIR/temporal" ]; then
  echo "building the Temporal CLI $TEMPORAL_CLI_VERSION (go install; several minutes the first time)"
  mkdir -p "$TEMPORAL_DIR"
  GOBIN="$TEMPORAL_DIR" go install "github.com/temporalio/cli/cmd/temporal@$TEMPORAL_CLI_VERSION"
fi
export AGENTRT_TEMPORAL_CLI="$TEMPORAL_DIR/temporal"
echo "AGENTRT_TEMPORAL_CLI=$AGENTRT_TEMPORAL_CLI"

step "gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.bin/*'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi

step "go mod tidy -diff"
go mod tidy -diff

step "go vet"
go vet ./...

step "staticcheck"
"$BIN/staticcheck" ./...

step "go build (packages, commands, examples)"
go build ./...

# -timeout is per package, a backstop for a test that hangs: the slowest
# package, server, took 231 s under -race at a host load of 5 and 1,200 s
# at a load of 25 (2 cores) before its load tests were made smaller under
# -race (docs/benchmarks.md); 30 minutes fails a hang, not a busy machine.
step "go test -race -shuffle=on"
go test -race -shuffle=on -count=1 -timeout 30m -json ./... | "$BIN/testreport" -state "$REPORT_STATE"

# Under -race the server's load tests run at a fifth of their size (the
# race detector makes their thousands of goroutines several times slower
# and larger); here they run at full size, 1,000 streams at once, without it.
step "the server's load tests at full size, without -race"
go test -count=1 -timeout 15m -run '^TestLoad' -json ./server/ | "$BIN/testreport" -state "$REPORT_STATE"

step "the temporal module (temporal/: go mod tidy -diff, vet, staticcheck, build, tests on the dev server)"
(cd temporal && go mod tidy -diff && go vet ./... && "$BIN/staticcheck" ./... && go build ./...)
(cd temporal && go test -race -shuffle=on -count=1 -timeout 15m -json ./...) | "$BIN/testreport" -state "$REPORT_STATE"

step "the patched MCP SDK (third_party/go-sdk/PATCH.md)"
(cd third_party/go-sdk && go vet ./internal/json/ && go test -race -count=1 -timeout 5m -json ./internal/json/) | "$BIN/testreport" -state "$REPORT_STATE"
STEP=
