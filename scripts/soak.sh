#!/usr/bin/env bash
# Soak test on one machine (issue 6): rpmem-soak against rpmemd started over a private sshd on
# loopback, the replica in /dev/shm with PMEM_IS_PMEM_FORCE=1 (like scripts/bench.sh), for
# MINUTES (default 10). Then the replica is verified byte for byte through the pool and from its
# part file. Not part of CI.
#   scripts/soak.sh [MINUTES] [rpmem-soak options...]   e.g. scripts/soak.sh 2 --threads 8
# Environment: SOAK_THREADS (4), SOAK_LANES (2), SOAK_POOL_MIB (256), RPMEM_PROVIDER (tcp|sockets),
# BUILD_DIR (build), SOAK_KEEP=1 keeps the work directory (checksum log, rpmemd log).
set -euo pipefail
cd "$(dirname "$0")/.."
minutes=${1:-10}
[ $# -gt 0 ] && shift
case "$minutes" in '' | *[!0-9.]*) echo "soak.sh: MINUTES must be a number, got '$minutes'" >&2; exit 2 ;; esac
scripts/install-deps.sh >/dev/null
build=${BUILD_DIR:-build}
if [ ! -f "$build/CMakeCache.txt" ]; then
  generator=()
  command -v ninja >/dev/null && generator=(-G Ninja)
  cmake -S . -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" >/dev/null
fi
cmake --build "$build" -j"$(nproc)" --target rpmem-soak rpmemd >/dev/null ||
  { echo "soak.sh: building rpmem-soak and rpmemd in $build failed: run cmake --build $build --target rpmem-soak rpmemd to see why" >&2; exit 2; }
build=$(cd "$build" && pwd)
work=$(mktemp -d /tmp/rpmem-soak.XXXXXX)
replica=$(mktemp -d /dev/shm/rpmem-soak.XXXXXX)
cleanup() {
  scripts/private-sshd.sh stop "$work/sshd" >/dev/null 2>&1 || true
  rm -rf "$replica"
  if [ "${SOAK_KEEP:-0}" = 1 ]; then echo "soak.sh: kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
pool_mib=${SOAK_POOL_MIB:-256}
printf 'PMEMPOOLSET\n%sM %s/soak.part\n' "$((pool_mib + 4))" "$replica" >"$replica/soak.set"
eval "$(scripts/private-sshd.sh start "$work/sshd")"
export RPMEM_CMD="PMEM_IS_PMEM_FORCE=1 ${RPMEMD_ENV:-} $build/bin/rpmemd --poolset-dir=$replica --log-file=$work/rpmemd.log ${RPMEMD_ARGS:-}"
seconds=$(awk -v m="$minutes" 'BEGIN { printf "%d", m * 60 }')
set +e
"$build/bin/rpmem-soak" "$RPMEM_DEMO_TARGET" soak.set --seconds "$seconds" \
  --threads "${SOAK_THREADS:-4}" --lanes "${SOAK_LANES:-2}" --pool-size "$((pool_mib << 20))" \
  --replica-file "$replica/soak.part" --log "$work/checksums.log" "$@"
rc=$?
set -e
echo "soak.sh: checksum log: $(wc -l <"$work/checksums.log") acknowledged ranges" \
  "($(du -h "$work/checksums.log" | cut -f1))"
if [ "$rc" -ne 0 ]; then
  echo "soak.sh: FAILED (rpmem-soak exit $rc); rpmemd log:" >&2
  tail -20 "$work/rpmemd.log" >&2 || true
fi
exit "$rc"
