#!/usr/bin/env bash
# CPU per transaction, side by side: pgbench -S -c 8 (or the script the
# options name, e.g. -b tpcb-like) through pgbouncer and
# through QueryFlux's PostgreSQL frontend, alternating, each ROUNDS times.
# For each: the proxy's user and kernel microseconds per transaction (from
# /proc/<pid>/stat, all threads), pgbench's own, and the whole machine's
# busy time (/proc/stat). On a VM whose speed drifts between runs, these
# move less than TPS does, and they say where a gap lies.
# Usage: bench/pgbench_cpu.sh [SECONDS=5] [ROUNDS=3] [pgbench options, e.g. -C]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-5}
rounds=${2:-3}
extra=("${@:3}")
source "$root/bench/gateway.sh"
start_pg_bench_gateway
pgb_pid=$(pgrep -x pgbouncer | head -1)
hz=$(getconf CLK_TCK)

ticks() { # user, kernel; none for direct access, which has no proxy
  if [ -n "$1" ]; then awk '{print $14, $15}' "/proc/$1/stat"; else echo 0 0; fi
}
machine_busy() { awk '/^cpu / {print $2 + $3 + $4 + $7 + $8}' /proc/stat; }

measure() { # port pid -> "tps user_us kernel_us pgbench_us machine_us postgres_us"
  local port=$1 pid=$2 u0 s0 u1 s1 m0 m1 p0 p1 out
  read -r u0 s0 < <(ticks "$pid")
  m0=$(machine_busy)
  p0=$(postgres_busy)
  out=$( { /usr/bin/time -f "pgbench-cpu %U %S" pgbench -n $(script_for "${extra[@]}") -c 8 -j 2 "${extra[@]}" -T "$secs" \
             -h 127.0.0.1 -p "$port" -U postgres postgres; } 2>&1)
  read -r u1 s1 < <(ticks "$pid")
  m1=$(machine_busy)
  p1=$(postgres_busy)
  echo "$out" | awk -v u=$((u1 - u0)) -v s=$((s1 - s0)) -v m=$((m1 - m0)) -v p=$((p1 - p0)) -v hz="$hz" '
    /^tps/ {tps = $3}
    /actually processed/ {split($NF, a, "/"); tx = a[1]}
    /^pgbench-cpu/ {pb = $2 + $3}
    END {us = 1e6 / tx; printf "%f %f %f %f %f %f\n", tps, u / hz * us, s / hz * us, pb * us, m / hz * us, p / hz * us}'
}

declare -A rows=()
for r in $(seq 1 "$rounds"); do
  rows[direct]+="$(measure "$pg_port" "")"$'\n'
  rows[pgbouncer]+="$(measure "$pgb_port" "$pgb_pid")"$'\n'
  rows[queryflux]+="$(measure "$qf_port" "$gateway_pid")"$'\n'
done

echo "pgbench $(script_for "${extra[@]}") -c 8 -j 2 ${extra[*]} -T $secs, $rounds alternating rounds; medians, microseconds per transaction"
printf '  %-10s %8s %10s %12s %10s %10s %10s\n' target tps "proxy user" "proxy kernel" pgbench postgres machine
for target in direct pgbouncer queryflux; do
  col() { echo "${rows[$target]}" | grep . | awk -v c="$1" '{print $c}' | median; }
  printf '  %-10s %8.0f %10.1f %12.1f %10.1f %10.1f %10.1f\n' "$target" "$(col 1)" "$(col 2)" "$(col 3)" "$(col 4)" "$(col 6)" "$(col 5)"
done
