#!/usr/bin/env bash
# Starts a gateway on bench/bench.yaml and runs trino_http_bench against it.
# Usage: bench/trino_http.sh [SECONDS_PER_RUN]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/deploy/build.sh" queryflux trino_http_bench >/dev/null
build=${QF_BUILD_DIR:-$root/build}
"$build/queryflux" serve --config "$root/bench/bench.yaml" --log-level warn &
gw=$!
trap 'kill $gw 2>/dev/null; wait $gw 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do
  curl -sf http://127.0.0.1:19000/readyz >/dev/null && break
  sleep 0.1
done
"$build/bench/trino_http_bench" 127.0.0.1 18080 "${1:-5}"
