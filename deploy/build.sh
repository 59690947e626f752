#!/usr/bin/env bash
# Configures and builds QueryFlux into ./build (ccache when present).
# Usage: deploy/build.sh [target...]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
export CCACHE_BASEDIR=$root CCACHE_NOHASHDIR=1
export CCACHE_DIR=${CCACHE_DIR:-/var/cache/queryflux-ccache}
mkdir -p "$CCACHE_DIR"
build=${QF_BUILD_DIR:-$root/build}
if [[ ! -f $build/build.ninja ]]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DQF_WARNINGS_AS_ERRORS=ON >/dev/null
fi
ninja -C "$build" "$@"
