#!/usr/bin/env bash
# pgbench side by side, interleaved in one run: (a) PostgreSQL direct,
# (b) pgbouncer in transaction mode, (c) QueryFlux's PostgreSQL frontend to
# the same PostgreSQL; each ROUNDS times, for -S, then -S -C (a new
# connection per transaction), then the TPC-B-like script (five statements
# in a BEGIN ... END block). Prints median TPS, average latency and the
# ratios to direct and to pgbouncer.
# Usage: bench/pgbench_compare.sh [SECONDS=5] [ROUNDS=3]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-5}
rounds=${2:-3}
source "$root/bench/gateway.sh"
start_pg_bench_gateway

run() { # port extra-args... -> "tps latency_ms"
  local port=$1; shift
  pgbench -n -c 8 -j 2 -T "$secs" -h 127.0.0.1 -p "$port" -U postgres "$@" postgres 2>/dev/null \
    | awk '/^latency average/ {lat=$4} /^tps/ {tps=$3} END {print tps, lat}'
}

for mode in "-S" "-S -C" "-b tpcb-like"; do
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
  echo "pgbench $mode -c 8 -j 2 -T $secs, median of $rounds interleaved rounds"
  report_against_direct_and_pgbouncer
  unset tps lat
done
