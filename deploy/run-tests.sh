#!/usr/bin/env bash
# From a fresh Debian 12 machine to a passing test run: installs what the
# tests need, builds everything, starts PostgreSQL, pgbouncer and MariaDB on
# loopback, runs unit, end-to-end and fuzz-replay tests.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/deploy/install-deps.sh"
(cd "$root/tests/e2e" && npm ci --no-audit --no-fund --loglevel=error)
"$root/deploy/build.sh"
"$root/deploy/services.sh" start # PostgreSQL, pgbouncer and MariaDB on loopback
export QF_PG_URL=${QF_PG_URL:-postgres://postgres@127.0.0.1:${QF_PG_PORT:-15432}/postgres}
export QF_MY_URL=${QF_MY_URL:-mysql://qf:qf@127.0.0.1:${QF_MY_PORT:-13306}/qftest}
cd "${QF_BUILD_DIR:-$root/build}"
ctest --output-on-failure --timeout 600 "$@"
