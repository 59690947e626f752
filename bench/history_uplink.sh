#!/usr/bin/env bash
# Workers' query history into the control plane (POST /worker/query-records
# from concurrent workers) beside raw COPY of the same rows, on the loopback
# PostgreSQL of deploy/services.sh.
# Usage: bench/history_uplink.sh [RECORDS=100000] [WORKERS=10]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/deploy/build.sh" history_uplink_bench >/dev/null
"$root/deploy/services.sh" start >/dev/null
QF_PG_URL=${QF_PG_URL:-postgres://postgres@127.0.0.1:${QF_PG_PORT:-15432}/postgres} \
  "${QF_BUILD_DIR:-$root/build}/bench/history_uplink_bench" "${1:-100000}" "${2:-10}"
