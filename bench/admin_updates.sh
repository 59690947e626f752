#!/usr/bin/env bash
# Admin API cluster updates per second, in memory beside PostgreSQL-backed,
# and whether routing follows each change at once.
# Usage: bench/admin_updates.sh [SECONDS=3]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/deploy/build.sh" queryflux >/dev/null
"$root/deploy/services.sh" start >/dev/null
(cd "$root/tests/e2e" && [[ -d node_modules ]] || npm ci --no-audit --no-fund --loglevel=error)
QF_BIN=${QF_BIN:-${QF_BUILD_DIR:-$root/build}/queryflux} node "$root/bench/admin_updates.mjs" "${1:-3}"
