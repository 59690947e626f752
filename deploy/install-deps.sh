#!/usr/bin/env bash
# Installs everything QueryFlux needs to build, run and test on Debian 12, as root.
# Idempotent: a second run only checks what is there.
set -euo pipefail

DUCKDB_VERSION=1.4.4
# The same DuckDB in each; the bindings' revisions differ by architecture.
case $(dpkg --print-architecture) in
  arm64) duckdb_arch=arm64 duckdb_rev=r.3 ;;
  *) duckdb_arch=x64 duckdb_rev=r.4 ;;
esac
DUCKDB_LIB_PACKAGE="@duckdb/node-bindings-linux-${duckdb_arch}@${DUCKDB_VERSION}-${duckdb_rev}"
DUCKDB_SRC_PACKAGE="duckdb@${DUCKDB_VERSION}"
DUCKDB_PREFIX=${DUCKDB_PREFIX:-/opt/duckdb-${DUCKDB_VERSION}}

# QF_DEPS=build: only what building the queryflux binary takes (the
# container image's build stage); else everything the tests need too.
packages=(
  g++ cmake ninja-build pkg-config ccache curl ca-certificates
  libcaf-dev libboost-dev libpqxx-dev libpq-dev nlohmann-json3-dev libspdlog-dev
  prometheus-cpp-dev libssl-dev libyaml-cpp-dev
  libsqlite3-dev libmariadb-dev libre2-dev nodejs npm
)
if [[ ${QF_DEPS:-all} != build ]]; then
  packages+=(
    libgtest-dev libgmock-dev
    postgresql postgresql-client pgbouncer mariadb-server mariadb-client
    prometheus bc libpostgresql-jdbc-java openssl
    docker-compose golang-go # the deployment examples' tests (Compose, the Helm chart)
    chromium # Studio's browser tests (playwright-core drives it)
  )
  # The pgjdbc e2e test runs its check as a single-file Java program.
  command -v java >/dev/null || packages+=(openjdk-17-jre-headless)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' \
    || missing+=("$p")
done
# Node may come from outside Debian (the image ships its own); accept it.
if command -v node >/dev/null && command -v npm >/dev/null; then
  filtered=()
  for p in "${missing[@]}"; do
    [[ $p == nodejs || $p == npm ]] || filtered+=("$p")
  done
  missing=("${filtered[@]}")
fi
if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=600 \
    --no-install-recommends "${missing[@]}"
fi

# DuckDB is not packaged by Debian. Its npm packages carry the shared library
# (node-bindings) and the C header (the source tree of the old binding).
if [[ ! -f $DUCKDB_PREFIX/lib/libduckdb.so || ! -f $DUCKDB_PREFIX/include/duckdb.h ]]; then
  echo "install-deps: fetching DuckDB ${DUCKDB_VERSION} from npm"
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  (cd "$work" && npm pack --silent "$DUCKDB_LIB_PACKAGE" "$DUCKDB_SRC_PACKAGE" >/dev/null)
  mkdir -p "$work/lib" "$work/src" "$DUCKDB_PREFIX/lib" "$DUCKDB_PREFIX/include"
  tar -xzf "$work"/duckdb-node-bindings-linux-"${duckdb_arch}"-*.tgz -C "$work/lib"
  tar -xzf "$work"/duckdb-"${DUCKDB_VERSION}".tgz -C "$work/src" \
    package/src/duckdb/src/include/duckdb.h
  install -m 0644 "$work/lib/package/libduckdb.so" "$DUCKDB_PREFIX/lib/libduckdb.so"
  install -m 0644 "$work/src/package/src/duckdb/src/include/duckdb.h" \
    "$DUCKDB_PREFIX/include/duckdb.h"
fi
echo "install-deps: ready (DuckDB in $DUCKDB_PREFIX)"
