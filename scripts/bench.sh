#!/usr/bin/env bash
# Runs rpmem-bench on one machine: a private sshd on loopback and rpmemd with its pool in
# /dev/shm and PMEM_IS_PMEM_FORCE=1 (models real pmem). Arguments go to rpmem-bench
# (e.g. --scenario latency --csv). RPMEM_PROVIDER=tcp|sockets selects the provider.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh >/dev/null
scripts/build.sh >/dev/null
build=$(cd "${BUILD_DIR:-build}" && pwd)
work=$(mktemp -d /tmp/rpmem-bench.XXXXXX)
replica=$(mktemp -d /dev/shm/rpmem-bench.XXXXXX)
cleanup() { scripts/private-sshd.sh stop "$work/sshd" >/dev/null 2>&1 || true; rm -rf "$work" "$replica"; }
trap cleanup EXIT
printf 'PMEMPOOLSET\n300M %s/bench.part\n' "$replica" > "$replica/bench.set"
eval "$(scripts/private-sshd.sh start "$work/sshd")"
export RPMEM_CMD="PMEM_IS_PMEM_FORCE=1 ${RPMEMD_ENV:-} $build/bin/rpmemd --poolset-dir=$replica --log-file=$work/rpmemd.log ${RPMEMD_ARGS:-}"
"$build/bin/rpmem-bench" "$RPMEM_DEMO_TARGET" bench.set "$@"
