#!/bin/bash
# A whole copy: an older build's rpmem sync (OLD_BUILD, e.g. a worktree of b60c305 built with
# scripts/build.sh) against this build's rpmem sync --full, each with its own rpmemd, 5
# alternating rounds on a 1 GiB pool in /dev/shm (docs/lab/performance-records.md, issue 16).
set -euo pipefail
cd "$(dirname "$0")/.."
new=$(cd "${BUILD_DIR:-build}" && pwd) old=${OLD_BUILD:?set OLD_BUILD to the older build directory}
work=$(mktemp -d /tmp/rpmem-fc.XXXXXX); shm=$(mktemp -d /dev/shm/rpmem-fc.XXXXXX)
trap 'scripts/private-sshd.sh stop "$work/sshd" >/dev/null 2>&1; rm -rf "$work" "$shm"' EXIT
eval "$(scripts/private-sshd.sh start "$work/sshd")"
mkdir "$shm/replica"
printf 'PMEMPOOLSET\n1G %s/replica/remote.part\n' "$shm" > "$shm/replica/remote.set"
printf 'PMEMPOOLSET\n1G %s/master.part\nREPLICA %s remote.set\n' "$shm" "$RPMEM_DEMO_TARGET" > "$shm/pool.set"
export RPMEM_PROVIDER=tcp
cmd() { echo "PMEM_IS_PMEM_FORCE=1 $1/bin/rpmemd --poolset-dir=$shm/replica --log-file=$work/rpmemd.log"; }
RPMEM_CMD="$(cmd $new)" LD_LIBRARY_PATH=$new/lib pmempool create --layout=fc obj "$shm/pool.set"
for r in 1 2 3 4 5; do
  for which in old new; do
    b=$old; args=""; [ $which = new ] && { b=$new; args=--full; }
    s=$(date +%s.%N)
    RPMEM_CMD="$(cmd $b)" LD_LIBRARY_PATH=$b/lib $b/bin/rpmem sync $args --progress none "$shm/pool.set" > /dev/null
    e=$(date +%s.%N)
    echo "$r $which $(awk "BEGIN { print $e - $s }")"
  done
done
