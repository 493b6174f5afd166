#!/usr/bin/env bash
# The whole test suite on a fresh Debian 12 machine: installs dependencies, builds, runs ctest.
# Runs as root with no tty and no stdin (as in CI). BUILD_DIR selects the build tree;
# extra arguments go to ctest (e.g. -L unit, -R fabric).
set -euo pipefail
cd "$(dirname "$0")/.."
from=$(date +%s)
scripts/install-deps.sh
echo "test.sh: installing dependencies took $(($(date +%s) - from)) s"
from=$(date +%s)
scripts/build.sh
echo "test.sh: build took $(($(date +%s) - from)) s"
build=${BUILD_DIR:-build}
# Two test processes per core: most tests wait on sockets, not the CPU.
jobs=$(( $(nproc) * 2 ))
cd "$build"
ctest --output-on-failure --timeout 300 -j"$jobs" "$@"
