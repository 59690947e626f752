#!/usr/bin/env bash
# Shared capacity: acquire+release pairs per second for one group through a
# control plane and its workers, against the per-query durable row design
# on PostgreSQL (QF_PG_URL), and the latency a lease adds to a query
# (coordination.mode: controlPlane against local), each in one run.
# Usage: bench/shared_capacity.sh [SECONDS=5] [QUERIES=1000]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${QF_BUILD_DIR:-$root/build}
"$root/deploy/build.sh" lease_throughput lease_latency >/dev/null
export QF_PG_URL=${QF_PG_URL:-postgres://postgres@127.0.0.1:${QF_PG_PORT:-15432}/postgres}
"$build/bench/lease_throughput" "${1:-5}"
"$build/bench/lease_latency" "${2:-1000}"
