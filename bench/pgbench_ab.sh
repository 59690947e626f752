#!/usr/bin/env bash
# Two QueryFlux binaries (a change and its base) side by side with
# pgbouncer: pgbench -S -c 8 -j 2 (or the script the options name, e.g.
# -b tpcb-like) alternating pgbouncer, A and B in every
# round, each gateway alive the whole run on its own port. Prints each
# round, then the medians: TPS, the ratio to pgbouncer, and CPU per
# transaction of the proxy, PostgreSQL and pgbench (from /proc).
#
# Why: on this VM two identical gateways differ by up to 8% in single
# runs, so a change worth a few percent shows only in medians of many
# short alternating rounds, with pgbouncer as the yardstick in each.
# Usage: bench/pgbench_ab.sh BIN_A BIN_B [SECONDS=4] [ROUNDS=8] [pgbench options]
#   e.g. bench/pgbench_ab.sh /tmp/base/queryflux build/queryflux
# WIRE_THREADS_A / WIRE_THREADS_B set each gateway's wireThreads (else its
# default), e.g. one binary against itself with 1 and 2 wire threads;
# POOL_A / POOL_B its cluster's poolSize (else 20); PIPELINE_A / PIPELINE_B
# its pipelineDepth (else the binary's default; older binaries know none).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin_a=$1
bin_b=$2
secs=${3:-4}
rounds=${4:-8}
extra=("${@:5}")
source "$root/bench/gateway.sh"
"$root/deploy/services.sh" start >/dev/null
pg_port=${QF_PG_PORT:-15432}
pgb_port=${QF_PGB_PORT:-16432}
pgbench -i -s 10 -q -h 127.0.0.1 -p "$pg_port" -U postgres postgres >/dev/null 2>&1

workdir=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$workdir"' EXIT

serve() { # binary base-port wire-threads pool-size [pipeline-depth] -> the gateway's pid in $served
  local bin=$1 base=$2 threads=${3:-0} pool=${4:-20} cfg="$workdir/$2.yaml"
  local depth=${5:+, pipelineDepth: $5}
  cat >"$cfg" <<YAML
queryflux:
  wireThreads: $threads
  externalAddress: http://127.0.0.1:$base
  frontends:
    trinoHttp: { port: $base }
    postgresWire: { port: $((base + 2)), maxConnections: 2000 }
  adminApi: { port: $((base + 1)) }
monitor: { taskDelay: 30s }
clusters:
  pg: { engine: postgres, endpoint: "postgres://postgres@127.0.0.1:$pg_port/postgres", poolSize: $pool$depth }
clusterGroups:
  bench: { members: [pg], maxRunningQueries: 20, maxQueuedQueries: 10000 }
YAML
  "$bin" serve --config "$cfg" --log-level warn &
  served=$!
  pids+=("$served")
  wait_ready $((base + 1))
}
serve "$bin_a" 27080 "${WIRE_THREADS_A:-0}" "${POOL_A:-20}" "${PIPELINE_A:-}"; pid_a=$served
serve "$bin_b" 27180 "${WIRE_THREADS_B:-0}" "${POOL_B:-20}" "${PIPELINE_B:-}"; pid_b=$served
pgb_pid=$(pgrep -x pgbouncer | head -1)
hz=$(getconf CLK_TCK)

ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
measure() { # port pid -> "tps proxy_us postgres_us pgbench_us"
  local port=$1 pid=$2 x0 x1 g0 g1 out
  x0=$(ticks "$pid")
  g0=$(postgres_busy)
  out=$( { /usr/bin/time -f "pgbench-cpu %U %S" pgbench -n $(script_for "${extra[@]}") -c 8 -j 2 "${extra[@]}" -T "$secs" \
             -h 127.0.0.1 -p "$port" -U postgres postgres; } 2>&1)
  x1=$(ticks "$pid")
  g1=$(postgres_busy)
  echo "$out" | awk -v x=$((x1 - x0)) -v g=$((g1 - g0)) -v hz="$hz" '
    /^tps/ {tps = $3}
    /actually processed/ {split($NF, a, "/"); tx = a[1]}
    /^pgbench-cpu/ {pb = $2 + $3}
    END {us = 1e6 / tx; printf "%d %.1f %.1f %.1f\n", tps, x / hz * us, g / hz * us, pb * us}'
}

measure 27082 "$pid_a" >/dev/null # warm both pools
measure 27182 "$pid_b" >/dev/null
declare -A rows=()
echo "pgbench $(script_for "${extra[@]}") -c 8 -j 2 ${extra[*]} -T $secs, $rounds rounds of pgbouncer, A, B"
echo "  A: $bin_a, wireThreads ${WIRE_THREADS_A:-0} (0: the default), poolSize ${POOL_A:-20}, pipelineDepth ${PIPELINE_A:-default}"
echo "  B: $bin_b, wireThreads ${WIRE_THREADS_B:-0}, poolSize ${POOL_B:-20}, pipelineDepth ${PIPELINE_B:-default}"
for r in $(seq 1 "$rounds"); do
  p=$(measure "$pgb_port" "$pgb_pid")
  a=$(measure 27082 "$pid_a")
  b=$(measure 27182 "$pid_b")
  rows[pgbouncer]+="$p"$'\n'
  rows[A]+="$a $(awk -v x="${a%% *}" -v y="${p%% *}" 'BEGIN {print x / y}')"$'\n'
  rows[B]+="$b $(awk -v x="${b%% *}" -v y="${p%% *}" 'BEGIN {print x / y}')"$'\n'
  echo "  round $r: pgbouncer $p | A $a | B $b  (tps proxy_us postgres_us pgbench_us)"
done
echo "medians; CPU in microseconds per transaction"
printf '  %-10s %8s %12s %9s %11s %9s\n' target tps "vs pgbouncer" proxy postgres pgbench
for target in pgbouncer A B; do
  col() { echo "${rows[$target]}" | grep . | awk -v c="$1" '{print $c}' | median; }
  ratio=$([ "$target" = pgbouncer ] && echo 1 || col 5)
  printf '  %-10s %8.0f %11.2fx %9.1f %11.1f %9.1f\n' "$target" "$(col 1)" "$ratio" "$(col 2)" "$(col 3)" "$(col 4)"
done
