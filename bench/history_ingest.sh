#!/usr/bin/env bash
# Query history ingest through the history_store actor beside raw COPY, on
# the loopback PostgreSQL of deploy/services.sh.
# Usage: bench/history_ingest.sh [RECORDS=100000]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/deploy/build.sh" history_ingest_bench >/dev/null
"$root/deploy/services.sh" start >/dev/null
"${QF_BUILD_DIR:-$root/build}/bench/history_ingest_bench" \
  "postgres://postgres@127.0.0.1:${QF_PG_PORT:-15432}/postgres" "${1:-100000}"
