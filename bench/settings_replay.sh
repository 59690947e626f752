#!/usr/bin/env bash
# What replaying clients' settings costs (docs/architecture.md, "Session
# state on pooled connections"): pgbench -S -c 8 -j 2 through QueryFlux's
# PostgreSQL frontend, interleaved in one run:
#   none   no client sets anything
#   alike  every client sets the same (PGOPTIONS), as one application's
#          pool does: connections take it once and keep it
#   mixed  two pgbench runs at once, 4 clients each, with different
#          settings: a statement often gets a connection the other group's
#          settings are on, and pays a replay round trip first
# and direct to PostgreSQL for scale. Prints median TPS and ratios to none.
# Usage: bench/settings_replay.sh [SECONDS=5] [ROUNDS=3]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-5}
rounds=${2:-3}
source "$root/bench/gateway.sh"
pg_port=${QF_PG_PORT:-15432}
qf_port=27282
start_one_cluster_gateway 27280 27281 "postgresWire: { port: $qf_port }" pg \
  "{ engine: postgres, endpoint: \"postgres://postgres@127.0.0.1:$pg_port/postgres\", poolSize: 20 }"
pgbench -i -s 10 -q -h 127.0.0.1 -p "$pg_port" -U postgres postgres >/dev/null 2>&1

tps() { # PORT CLIENTS THREADS [PGOPTIONS]: the run's TPS
  PGOPTIONS=${4:-} pgbench -n -S -c "$2" -j "$3" -T "$secs" -h 127.0.0.1 -p "$1" -U postgres postgres \
    2>/dev/null | awk '/^tps/ {printf "%d\n", $3}'
}
mixed() { # two groups of 4 clients with different settings, at once
  local a b
  a=$(mktemp)
  tps "$qf_port" 4 1 "-c work_mem=4MB -c search_path=public" >"$a" &
  b=$(tps "$qf_port" 4 1 "-c work_mem=8MB")
  wait
  echo $(($(cat "$a") + b))
  rm -f "$a"
}

tps "$qf_port" 8 2 >/dev/null # warm the pool
declare -A runs=()
for _ in $(seq 1 "$rounds"); do
  runs[direct]+="$(tps "$pg_port" 8 2) "
  runs[none]+="$(tps "$qf_port" 8 2) "
  runs[alike]+="$(tps "$qf_port" 8 2 "-c work_mem=4MB -c search_path=public") "
  runs[mixed]+="$(mixed) "
done
echo "pgbench -S -c 8 -j 2 -T $secs through QueryFlux, median of $rounds interleaved rounds"
base=$(echo "${runs[none]}" | tr ' ' '\n' | grep . | median)
for k in direct none alike mixed; do
  m=$(echo "${runs[$k]}" | tr ' ' '\n' | grep . | median)
  printf "  %-7s %7d tps   %.2fx none\n" "$k" "$m" "$(echo "$m / $base" | bc -l)"
done
