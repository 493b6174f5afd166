#!/usr/bin/env bash
# Runs rpmem-bench on one machine: a private sshd on loopback, rpmemd with its pools in /dev/shm
# and PMEM_IS_PMEM_FORCE=1 (models real pmem), rpmem-floor beside it for the transport floor.
# Arguments go to rpmem-bench, e.g.
#   scripts/bench.sh --provider tcp,sockets --plot docs/img/bench.png
#   FAKE_EADR=1 scripts/bench.sh -s latency --method gpspm,apm --csv
# Environment: BUILD_DIR (default build), SKIP_BUILD=1 (use the build as it is),
# RPMEMD_ARGS / RPMEMD_ENV (extra rpmemd arguments / environment), POOL_SIZE (default 300M),
# RPMEMD_LOG=FILE (keep rpmemd's log: its "session end" lines count the requests served),
# FAKE_EADR=1 (rpmemd under scripts/fake-eadr.sh: a platform that flushes its caches on power
# loss, the only one where APM over tcp and sockets is durable, so `--method apm` needs it; root).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${SKIP_BUILD:-0}" != 1 ]; then
  scripts/install-deps.sh >/dev/null
  scripts/build.sh >/dev/null
fi
build=$(cd "${BUILD_DIR:-build}" && pwd)
for b in rpmem-bench rpmem-floor rpmemd; do
  [ -x "$build/bin/$b" ] || { echo "$0: $build/bin/$b is missing: build it (scripts/build.sh)" >&2; exit 1; }
done
work=$(mktemp -d /tmp/rpmem-bench.XXXXXX)
replica=$(mktemp -d /dev/shm/rpmem-bench.XXXXXX)
cleanup() {
  [ -z "${RPMEMD_LOG:-}" ] || cp "$work/rpmemd.log" "$RPMEMD_LOG" 2>/dev/null || true
  scripts/private-sshd.sh stop "$work/sshd" >/dev/null 2>&1 || true
  rm -rf "$work" "$replica"
}
trap cleanup EXIT
printf 'PMEMPOOLSET\n%s %s/bench.part\n' "${POOL_SIZE:-300M}" "$replica" > "$replica/bench.set"
# The replica of the libpmemobj scenario (its local pool is 64M by default).
printf 'PMEMPOOLSET\n80M %s/obj.part\n' "$replica" > "$replica/obj.set"
# The replicas of the fan-out scenario: one pool set (and one rpmemd) each.
for i in 1 2 3; do printf 'PMEMPOOLSET\n72M %s/fan%s.part\n' "$replica" "$i" > "$replica/fan$i.set"; done
eval "$(scripts/private-sshd.sh start "$work/sshd")"
eadr=
[ "${FAKE_EADR:-0}" != 1 ] || eadr="$PWD/scripts/fake-eadr.sh "
export RPMEM_CMD="PMEM_IS_PMEM_FORCE=1 ${RPMEMD_ENV:-} $eadr$build/bin/rpmemd --poolset-dir=$replica --log-file=$work/rpmemd.log${RPMEMD_LOG:+ --log-level=notice} ${RPMEMD_ARGS:-}"
"$build/bin/rpmem-bench" "$RPMEM_DEMO_TARGET" bench.set --pmemobj-remote-set obj.set \
  --fanout-sets fan1.set,fan2.set,fan3.set "$@"
