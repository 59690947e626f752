# Sourced by the bench scripts: builds, starts the loopback services, and
# serves a gateway on the config given, until the script exits.
# Usage: start_gateway CONFIG_FILE ADMIN_PORT
root=${root:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}

start_gateway() {
  local cfg=$1 admin_port=$2
  "$root/deploy/build.sh" queryflux >/dev/null
  "$root/deploy/services.sh" start >/dev/null
  "${QF_BUILD_DIR:-$root/build}/queryflux" serve --config "$cfg" --log-level warn &
  gateway_pid=$!
  trap 'kill $gateway_pid 2>/dev/null; wait $gateway_pid 2>/dev/null || true; rm -f "$cfg"' EXIT
  wait_ready "$admin_port"
}

wait_ready() { # ADMIN_PORT: until the gateway there answers /readyz
  for _ in $(seq 1 100); do
    curl -sf "http://127.0.0.1:$1/readyz" >/dev/null && return 0
    sleep 0.1
  done
  echo "bench: the gateway on admin port $1 did not become ready" >&2
  return 1
}

# pgbench's select-only script (-S), unless the options name one of their
# own (-b, -f, -N, -S, --builtin, --file): given two, pgbench runs a mix.
script_for() { # pgbench options -> "-S" or nothing
  local o
  for o in "$@"; do
    [[ $o == -b* || $o == -f* || $o == -N || $o == -S || $o == --builtin* || $o == --file* ]] \
      && return
  done
  echo -S
}

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# The medians of the rounds in the global arrays tps and lat (by target:
# direct, pgbouncer, queryflux, or the targets given), with the ratios to
# direct and pgbouncer.
report_against_direct_and_pgbouncer() {
  local base pooler target t l targets=("$@")
  ((${#targets[@]})) || targets=(direct pgbouncer queryflux)
  base=$(echo "${tps[direct]}" | tr ' ' '\n' | grep . | median)
  pooler=$(echo "${tps[pgbouncer]}" | tr ' ' '\n' | grep . | median)
  for target in "${targets[@]}"; do
    t=$(echo "${tps[$target]}" | tr ' ' '\n' | grep . | median)
    l=$(echo "${lat[$target]}" | tr ' ' '\n' | grep . | median)
    printf '  %-14s %10.0f tps  %7.3f ms avg latency  %5.2fx direct  %5.2fx pgbouncer\n' \
      "$target" "$t" "$l" "$(echo "$t / $base" | bc -l)" "$(echo "$t / $pooler" | bc -l)"
  done
}

# The server's backends and helpers alive at both ends of a run: it misses
# backends that exit within the run, which are every backend of direct
# access and of -C; for the two proxies' pooled backends it is all of them.
postgres_busy() { # ticks, user plus kernel, of every process named postgres
  local p t=0
  for p in $(pgrep -x postgres); do
    t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null || echo 0)))
  done
  echo "$t"
}

# A gateway with one group, bench, of one cluster, until the script exits.
# Usage: start_one_cluster_gateway HTTP_PORT ADMIN_PORT FRONTEND_YAML CLUSTER CLUSTER_YAML
start_one_cluster_gateway() {
  local http_port=$1 admin_port=$2 frontend=$3 cluster=$4 cluster_yaml=$5
  cfg=$(mktemp --suffix=.yaml) # global: start_gateway's exit trap removes it
  cat >"$cfg" <<YAML
queryflux:
  externalAddress: http://127.0.0.1:$http_port
  frontends:
    trinoHttp: { port: $http_port }
    $frontend
  adminApi: { port: $admin_port }
monitor: { taskDelay: 30s }
clusters:
  $cluster: $cluster_yaml
clusterGroups:
  bench: { members: [$cluster], maxRunningQueries: 20, maxQueuedQueries: 10000 }
YAML
  start_gateway "$cfg" "$admin_port"
}

# The loopback PostgreSQL on $pg_port (poolSize 20; pipelineDepth 8, or
# QF_PIPELINE_DEPTH: PostgreSQL shares this machine's two cores) behind QueryFlux's
# PostgreSQL frontend on $qf_port, and the pgbench tables at scale 10:
# what the pgbench scripts compare.
start_pg_bench_gateway() {
  pg_port=${QF_PG_PORT:-15432}
  pgb_port=${QF_PGB_PORT:-16432}
  qf_port=25432
  start_one_cluster_gateway 25080 25090 \
    "postgresWire: { port: $qf_port, maxConnections: 2000 }" pg \
    "{ engine: postgres, endpoint: \"postgres://postgres@127.0.0.1:$pg_port/postgres\", poolSize: 20, pipelineDepth: ${QF_PIPELINE_DEPTH:-8} }"
  pgbench -i -s 10 -q -h 127.0.0.1 -p "$pg_port" -U postgres postgres >/dev/null 2>&1
}
