#!/usr/bin/env bash
# Admission under a binding limit, interleaved in one run: pgbench -S with
# 8 clients onto (a) PostgreSQL direct, (b) pgbouncer in transaction mode
# with default_pool_size = 4, (c) QueryFlux's PostgreSQL frontend with
# the group at maxRunningQueries: 4 (pipelineDepth: 8, as
# pgbench_compare.sh), (d) the same without pipelining, all on the same
# PostgreSQL. Half the clients' statements find the limit full and wait:
# what is compared is how fast a freed slot reaches the next waiter.
# Prints median TPS, average latency and the ratios to direct and to
# pgbouncer.
# Usage: bench/pgbench_binding_limit.sh [SECONDS=5] [ROUNDS=3]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-5}
rounds=${2:-3}
source "$root/bench/gateway.sh"
pg_port=${QF_PG_PORT:-15432}
qf_port=25442
qf1_port=25443
pgb4_port=16442

"$root/deploy/services.sh" start >/dev/null
# A pgbouncer of its own with four server connections.
pgb_dir=$(mktemp -d)
chmod 755 "$pgb_dir"
cat >"$pgb_dir/pgb.ini" <<INI
[databases]
* = host=127.0.0.1 port=$pg_port
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $pgb4_port
unix_socket_dir = $pgb_dir
auth_type = trust
auth_file = $pgb_dir/users.txt
pool_mode = transaction
max_client_conn = 1000
default_pool_size = 4
logfile = $pgb_dir/pgb.log
pidfile = $pgb_dir/pgb.pid
INI
echo '"postgres" ""' >"$pgb_dir/users.txt"
chown -R postgres:postgres "$pgb_dir"
runuser -u postgres -- pgbouncer -d "$pgb_dir/pgb.ini"
for _ in $(seq 1 100); do
  psql -h 127.0.0.1 -p "$pgb4_port" -U postgres -c 'SELECT 1' postgres >/dev/null 2>&1 && break
  sleep 0.1
done

gateway_config() { # PG_PORT HTTP_PORT ADMIN_PORT PIPELINE_DEPTH
  cat <<YAML
queryflux:
  externalAddress: http://127.0.0.1:$2
  frontends:
    trinoHttp: { port: $2 }
    postgresWire: { port: $1, maxConnections: 2000 }
  adminApi: { port: $3 }
monitor: { taskDelay: 30s }
clusters:
  pg: { engine: postgres, endpoint: "postgres://postgres@127.0.0.1:$pg_port/postgres", maxRunningQueries: 4, pipelineDepth: $4 }
clusterGroups:
  bench: { members: [pg], maxRunningQueries: 4, maxQueuedQueries: 10000 }
YAML
}
cfg=$(mktemp --suffix=.yaml)
cfg1=$(mktemp --suffix=.yaml)
gateway_config "$qf_port" 25480 25490 8 >"$cfg"
gateway_config "$qf1_port" 25481 25491 1 >"$cfg1"
start_gateway "$cfg" 25490
"${QF_BUILD_DIR:-$root/build}/queryflux" serve --config "$cfg1" --log-level warn &
gateway1_pid=$!
trap 'kill $gateway_pid $gateway1_pid 2>/dev/null; wait $gateway_pid $gateway1_pid 2>/dev/null || true;
      rm -f "$cfg" "$cfg1"; kill "$(cat "$pgb_dir/pgb.pid")" 2>/dev/null || true; rm -rf "$pgb_dir"' EXIT
wait_ready 25491
pgbench -i -s 10 -q -h 127.0.0.1 -p "$pg_port" -U postgres postgres >/dev/null 2>&1

run() { # port -> "tps latency_ms"
  pgbench -n -S -c 8 -j 2 -T "$secs" -h 127.0.0.1 -p "$1" -U postgres postgres 2>/dev/null \
    | awk '/^latency average/ {lat=$4} /^tps/ {tps=$3} END {print tps, lat}'
}

declare -A tps=() lat=()
for _ in $(seq 1 "$rounds"); do
  for target in direct pgbouncer queryflux queryflux-d1; do
    case $target in
      direct) port=$pg_port ;;
      pgbouncer) port=$pgb4_port ;;
      queryflux) port=$qf_port ;;
      queryflux-d1) port=$qf1_port ;;
    esac
    read -r t l < <(run "$port")
    tps[$target]+="$t "
    lat[$target]+="$l "
  done
done
echo "pgbench -S -c 8 -j 2 -T $secs onto a limit of 4 (pgbouncer: default_pool_size 4;" \
  "queryflux: pipelineDepth 8, queryflux-d1: none), median of $rounds interleaved rounds"
report_against_direct_and_pgbouncer direct pgbouncer queryflux queryflux-d1
