#!/usr/bin/env bash
# From a fresh Debian 12 machine to a passing test run: installs what the
# tests need, builds everything, runs unit, end-to-end and fuzz-replay tests.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/deploy/install-deps.sh"
(cd "$root/tests/e2e" && npm ci --no-audit --no-fund --loglevel=error)
"$root/deploy/build.sh"
cd "${QF_BUILD_DIR:-$root/build}"
ctest --output-on-failure --timeout 600 "$@"
