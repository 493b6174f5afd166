#!/usr/bin/env bash
# A seeded schedule of faults against replica hosts while every kind of writer records what was
# acknowledged, checked as it goes and at the end (docs/chaos.md). Needs root: network
# namespaces (a star of veth pairs, blackhole routes for their subnets), a tmpfs per host.
#   scripts/chaos.sh [--seed S] [--minutes M | --seconds N] [--hosts 2|3] [rpmem-chaos options]
# Without --seed a fresh one is drawn and printed first; the same seed replays the same faults
# at the same offsets. Defaults: 3 minutes, 3 hosts. The hour-long run:
#   scripts/chaos.sh --minutes 60
# Exit status: 0 passed, 1 a promise was broken (the seed, the faults up to it and the history
# around it are printed), 2 the run could not be set up. BUILD_DIR (build) picks the build;
# CHAOS_NICE (10) the niceness it runs at.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
if [ ! -f "$build/CMakeCache.txt" ]; then
  scripts/install-deps.sh >/dev/null
  generator=()
  command -v ninja >/dev/null && generator=(-G Ninja)
  cmake -S . -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" >/dev/null
fi
cmake --build "$build" -j"$(nproc)" --target rpmem-chaos >/dev/null ||
  { echo "chaos.sh: building rpmem-chaos in $build failed: run cmake --build $build --target rpmem-chaos to see why" >&2; exit 2; }
if [ "$(id -u)" != 0 ]; then
  echo "chaos.sh: needs root (network namespaces, tmpfs mounts): run it as root" >&2
  exit 2
fi
mkdir -p /run/sshd
exec nice -n "${CHAOS_NICE:-10}" "$build/bin/rpmem-chaos" "$@"
