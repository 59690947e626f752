#!/usr/bin/env bash
# Starts (or stops) the throwaway servers the tests talk to, on loopback:
# PostgreSQL 15 on 15432, pgbouncer (transaction pooling) on 16432 and
# MariaDB 10.11 on 13306 (user qf, password qf, database qftest).
# Usage: deploy/services.sh start|stop
#   (env: QF_SVC_DIR, QF_PG_PORT, QF_PGB_PORT, QF_MY_PORT)
set -euo pipefail
SVC_DIR=${QF_SVC_DIR:-/tmp/queryflux-services}
PG_PORT=${QF_PG_PORT:-15432}
PGB_PORT=${QF_PGB_PORT:-16432}
MY_PORT=${QF_MY_PORT:-13306}
MY_SOCK=$SVC_DIR/my/mysqld.sock
PGBIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)

wait_for() { # what, command...
  local what=$1; shift
  for _ in $(seq 1 100); do "$@" >/dev/null 2>&1 && return 0; sleep 0.2; done
  echo "services: $what did not come up" >&2
  return 1
}

start() {
  cd / # runuser keeps the cwd, which postgres may not be able to read
  mkdir -p "$SVC_DIR"
  chmod 755 "$SVC_DIR"
  id postgres >/dev/null 2>&1 || useradd --system --shell /bin/false postgres
  install -d -o postgres -g postgres "$SVC_DIR/pg" "$SVC_DIR/pgb"
  if [[ ! -f $SVC_DIR/pg/data/PG_VERSION ]]; then
    runuser -u postgres -- "$PGBIN/initdb" -D "$SVC_DIR/pg/data" -U postgres \
      -A trust -E UTF8 --no-locale --no-sync >"$SVC_DIR/pg/initdb.log"
  fi
  if ! runuser -u postgres -- "$PGBIN/pg_ctl" -D "$SVC_DIR/pg/data" status >/dev/null 2>&1; then
    runuser -u postgres -- "$PGBIN/pg_ctl" -D "$SVC_DIR/pg/data" \
      -l "$SVC_DIR/pg/server.log" -w -t 60 start -o "-p $PG_PORT -k $SVC_DIR/pg \
      -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off \
      -c full_page_writes=off -c max_connections=300" >/dev/null
  fi
  wait_for PostgreSQL psql -h 127.0.0.1 -p "$PG_PORT" -U postgres -c 'SELECT 1'
  cat >"$SVC_DIR/pgb/pgb.ini" <<INI
[databases]
* = host=127.0.0.1 port=$PG_PORT
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $PGB_PORT
unix_socket_dir = $SVC_DIR/pgb
auth_type = trust
auth_file = $SVC_DIR/pgb/users.txt
pool_mode = transaction
max_client_conn = 1000
default_pool_size = 20
admin_users = postgres
logfile = $SVC_DIR/pgb/pgb.log
pidfile = $SVC_DIR/pgb/pgb.pid
INI
  echo '"postgres" ""' >"$SVC_DIR/pgb/users.txt"
  chown postgres:postgres "$SVC_DIR/pgb/"*
  if ! [[ -f $SVC_DIR/pgb/pgb.pid ]] || ! kill -0 "$(cat "$SVC_DIR/pgb/pgb.pid")" 2>/dev/null; then
    runuser -u postgres -- pgbouncer -d "$SVC_DIR/pgb/pgb.ini"
  fi
  wait_for pgbouncer psql -h 127.0.0.1 -p "$PGB_PORT" -U postgres -c 'SELECT 1' postgres
  start_mariadb
  echo "services: PostgreSQL on 127.0.0.1:$PG_PORT, pgbouncer on 127.0.0.1:$PGB_PORT," \
    "MariaDB on 127.0.0.1:$MY_PORT"
}

# --no-defaults: Debian's /etc/mysql files point at /run/mysqld and a system
# service; this server keeps everything under $SVC_DIR.
start_mariadb() {
  mkdir -p "$SVC_DIR/my"
  if [[ ! -d $SVC_DIR/my/data/mysql ]]; then
    mariadb-install-db --no-defaults --user=root --datadir="$SVC_DIR/my/data" \
      --auth-root-authentication-method=normal --skip-test-db \
      >"$SVC_DIR/my/install.log" 2>&1
  fi
  if ! mariadb-admin --no-defaults -uroot --socket="$MY_SOCK" ping >/dev/null 2>&1; then
    nohup mariadbd --no-defaults --user=root --datadir="$SVC_DIR/my/data" \
      --socket="$MY_SOCK" --port="$MY_PORT" --bind-address=127.0.0.1 \
      --pid-file="$SVC_DIR/my/mysqld.pid" --log-error="$SVC_DIR/my/err.log" \
      --skip-log-bin --innodb-buffer-pool-size=64M \
      --innodb-flush-log-at-trx-commit=0 --max-connections=500 \
      --character-set-server=utf8mb4 --collation-server=utf8mb4_unicode_ci >/dev/null 2>&1 &
  fi
  wait_for MariaDB mariadb-admin --no-defaults -uroot --socket="$MY_SOCK" ping
  mariadb --no-defaults -uroot --socket="$MY_SOCK" -e "
    CREATE USER IF NOT EXISTS 'qf'@'%' IDENTIFIED BY 'qf';
    GRANT ALL ON *.* TO 'qf'@'%';
    CREATE DATABASE IF NOT EXISTS qftest;
    ALTER DATABASE qftest CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;"
}

stop() {
  if [[ -S $MY_SOCK ]]; then
    mariadb-admin --no-defaults -uroot --socket="$MY_SOCK" shutdown >/dev/null 2>&1 || true
  fi
  if [[ -f $SVC_DIR/pgb/pgb.pid ]]; then
    kill "$(cat "$SVC_DIR/pgb/pgb.pid")" 2>/dev/null || true
  fi
  if [[ -f $SVC_DIR/pg/data/postmaster.pid ]]; then
    runuser -u postgres -- "$PGBIN/pg_ctl" -D "$SVC_DIR/pg/data" -m fast -w stop >/dev/null || true
  fi
}

"${1:-start}"
