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
  for _ in $(seq 1 100); do
    curl -sf "http://127.0.0.1:$admin_port/readyz" >/dev/null && return 0
    sleep 0.1
  done
  echo "bench: the gateway did not become ready" >&2
  return 1
}

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
