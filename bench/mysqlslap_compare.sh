#!/usr/bin/env bash
# mysqlslap side by side, interleaved in one run: (a) MariaDB direct,
# (b) QueryFlux's MySQL frontend to the same MariaDB. A point select by
# primary key, 8 concurrent clients, ROUNDS times each; prints the median
# time per run, queries per second and the ratio to direct. Run twice:
# persistent connections, and a new connection per query (-C style:
# --commit=0 --detach=1 reconnects after every query).
# Usage: bench/mysqlslap_compare.sh [QUERIES=20000] [ROUNDS=3]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
queries=${1:-20000}
rounds=${2:-3}
source "$root/bench/gateway.sh"
my_port=${QF_MY_PORT:-13306}
qf_port=25306
start_one_cluster_gateway 25081 25091 "mysqlWire: { port: $qf_port }" maria \
  "{ engine: mysql, endpoint: \"mysql://qf:qf@127.0.0.1:$my_port/qftest\", poolSize: 20 }"
mariadb --no-defaults -h127.0.0.1 -P"$my_port" -uqf -pqf qftest -e "
  CREATE TABLE IF NOT EXISTS slap_accounts (id INT PRIMARY KEY, balance INT, filler CHAR(84));
  INSERT IGNORE INTO slap_accounts SELECT seq, 0, '' FROM seq_1_to_100000;"

run() { # port user password detach -> seconds
  local port=$1 user=$2 password=$3 detach=$4
  mysqlslap --no-defaults -h127.0.0.1 -P"$port" -u"$user" ${password:+-p"$password"} \
    --create-schema=qftest --no-drop --concurrency=8 --iterations=1 \
    --number-of-queries="$queries" --detach="$detach" \
    --query="SELECT balance FROM slap_accounts WHERE id = 4242" 2>/dev/null \
    | awk '/Average number of seconds to run all queries/ {print $9}'
}

for detach in 0 1; do
  declare -A secs=()
  for _ in $(seq 1 "$rounds"); do
    secs[direct]+="$(run "$my_port" qf qf "$detach") "
    secs[queryflux]+="$(run "$qf_port" app "" "$detach") "
  done
  label=$([[ $detach == 0 ]] && echo "persistent connections" || echo "a new connection per query")
  echo "mysqlslap -c 8, $queries point selects, $label, median of $rounds interleaved rounds"
  base=$(echo "${secs[direct]}" | tr ' ' '\n' | grep . | median)
  for target in direct queryflux; do
    s=$(echo "${secs[$target]}" | tr ' ' '\n' | grep . | median)
    printf '  %-10s %8.3f s  %9.0f queries/s  %5.2fx direct\n' "$target" "$s" \
      "$(echo "$queries / $s" | bc -l)" "$(echo "$base / $s" | bc -l)"
  done
  unset secs
done
