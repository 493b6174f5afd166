#!/usr/bin/env bash
# Configures and builds rpmem into ${BUILD_DIR:-build}. Extra arguments go to cmake.
# The install prefix is /usr, as for Debian packages: the package tests build the .debs from
# this tree and lintian judges them (`cmake --install build --prefix DIR` installs elsewhere).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S . -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" \
    -DCMAKE_INSTALL_PREFIX=/usr "$@"
fi
cmake --build "$build" -j"$(nproc)"
