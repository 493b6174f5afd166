#!/bin/bash
# replicated_pool's asynchronous mode with one replica, two builds side by side, alternating:
# BASE_BUILD (default /tmp/wt-base/build, e.g. a git worktree of an older commit built with
# `ninja replicated-pool-bench rpmemd`) and build/. Master and replica in /dev/shm,
# PMEM_IS_PMEM_FORCE=1, tcp on loopback; prints each run's throughput until barrier().
# Usage: bench/async-large-ab.sh ROUNDS OPS BYTES   (docs/lab/performance-records.md, issue 17)
set -u
cd "$(dirname "$0")/.."
rounds=$1 ops=$2 bytes=$3
work=$(mktemp -d /tmp/rpb.XXXXXX)
rep=$(mktemp -d /dev/shm/rpb.XXXXXX)
eval "$(scripts/private-sshd.sh start "$work/sshd")"
trap 'scripts/private-sshd.sh stop "$work/sshd" >/dev/null 2>&1; rm -rf "$work" "$rep"' EXIT
printf 'PMEMPOOLSET\n200M %s/remote.part\n' "$rep" > "$rep/remote.set"
for r in $(seq $rounds); do
  for v in base new; do
    if [ $v = base ]; then b=${BASE_BUILD:-/tmp/wt-base/build}; else b=$PWD/build; fi
    rm -f "$rep/remote.part" /dev/shm/rpb-master.part
    printf 'PMEMPOOLSET\n192M /dev/shm/rpb-master.part\nREPLICA %s remote.set\n' "$RPMEM_DEMO_TARGET" > "$work/m.set"
    RPMEM_CMD="PMEM_IS_PMEM_FORCE=1 $b/bin/rpmemd --poolset-dir=$rep" PMEM_IS_PMEM_FORCE=1 \
      LD_LIBRARY_PATH=$b/lib $b/bin/replicated-pool-bench "$work/m.set" async $ops $bytes 2>&1 | grep "^async replicas" | sed -E "s/^/$r $v /; s/persist median.*throughput/throughput/"
  done
done
rm -f /dev/shm/rpb-master.part
