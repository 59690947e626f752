#!/usr/bin/env bash
# pgbench -S side by side, interleaved in one run: (a) PostgreSQL direct,
# (b) pgbouncer in transaction mode, (c) QueryFlux's PostgreSQL frontend to
# the same PostgreSQL; each ROUNDS times, then again with -C (a new
# connection per transaction). Prints median TPS, average latency and the
# ratios to direct.
# Usage: bench/pgbench_compare.sh [SECONDS=5] [ROUNDS=3]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-5}
rounds=${2:-3}
source "$root/bench/gateway.sh"
start_pg_bench_gateway

run() { # port extra-args... -> "tps latency_ms"
  local port=$1; shift
  pgbench -n -S -c 8 -j 2 -T "$secs" -h 127.0.0.1 -p "$port" -U postgres "$@" postgres 2>/dev/null \
    | awk '/^latency average/ {lat=$4} /^tps/ {tps=$3} END {print tps, lat}'
}

for mode in "" "-C"; do
  declare -A tps=() lat=()
  for r in $(seq 1 "$rounds"); do
    for target in direct pgbouncer queryflux; do
      case $target in
        direct) port=$pg_port ;;
        pgbouncer) port=$pgb_port ;;
        queryflux) port=$qf_port ;;
      esac
      read -r t l < <(run "$port" $mode)
      tps[$target]+="$t "
      lat[$target]+="$l "
    done
  done
  echo "pgbench -S -c 8 -j 2 -T $secs ${mode:-(persistent connections)}, median of $rounds interleaved rounds"
  base=$(echo "${tps[direct]}" | tr ' ' '\n' | grep . | median)
  for target in direct pgbouncer queryflux; do
    t=$(echo "${tps[$target]}" | tr ' ' '\n' | grep . | median)
    l=$(echo "${lat[$target]}" | tr ' ' '\n' | grep . | median)
    printf '  %-10s %10.0f tps  %7.3f ms avg latency  %5.2fx direct\n' "$target" "$t" "$l" \
      "$(echo "$t / $base" | bc -l)"
  done
  unset tps lat
done
