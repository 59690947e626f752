#!/usr/bin/env bash
# Worker mode: an admin edit's propagation to 100 in-process workers (p50,
# p99), and a control plane holding 1,000 idle long polls (memory, CPU).
# Usage: bench/worker_mode.sh [WORKERS=100] [EDITS=10] [POLLS=1000] [SECONDS=20]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${QF_BUILD_DIR:-$root/build}
"$root/deploy/build.sh" queryflux config_propagation >/dev/null
"$build/bench/config_propagation" "${1:-100}" "${2:-10}"
node "$root/bench/long_polls.mjs" "$build/queryflux" "${3:-1000}" "${4:-20}"
