#!/bin/bash
# Delta resync against a whole copy (issue 16, docs/lab/performance-records.md): a 1 GiB
# master in /dev/shm with one remote replica on loopback (tcp, private sshd,
# PMEM_IS_PMEM_FORCE=1 on rpmemd), and ROUNDS alternating rounds of
#   full     rpmem sync --full                         (today's whole copy)
#   scatter  1 MiB changed in 16 places of 64 KiB, then rpmem sync (delta)
#   insync   rpmem sync of a replica already in sync   (delta: checksums only)
# One line per run: "<round> <kind> <seconds> <bytes moved> <compare s> <local checksum s>".
# Uses the build in BUILD_DIR (default build) as it is. SIZE (default 1G), ROUNDS (default 5).
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(cd "${BUILD_DIR:-build}" && pwd)
size=${SIZE:-1G}
rounds=${ROUNDS:-5}
work=$(mktemp -d /tmp/rpmem-resync.XXXXXX)
shm=$(mktemp -d /dev/shm/rpmem-resync.XXXXXX)
cleanup() {
  scripts/private-sshd.sh stop "$work/sshd" >/dev/null 2>&1 || true
  rm -rf "$work" "$shm"
}
trap cleanup EXIT
eval "$(scripts/private-sshd.sh start "$work/sshd")"
mkdir "$shm/replica"
printf 'PMEMPOOLSET\n%s %s/replica/remote.part\n' "$size" "$shm" > "$shm/replica/remote.set"
printf 'PMEMPOOLSET\n%s %s/master.part\nREPLICA %s remote.set\n' "$size" "$shm" "$RPMEM_DEMO_TARGET" > "$shm/pool.set"
export RPMEM_CMD="PMEM_IS_PMEM_FORCE=1 $build/bin/rpmemd --poolset-dir=$shm/replica --log-file=$work/rpmemd.log"
export LD_LIBRARY_PATH=$build/lib
export RPMEM_PROVIDER=${RPMEM_PROVIDER:-tcp}
pmempool create --layout=resync obj "$shm/pool.set"
"$build/bin/rpmem" sync --full --progress none "$shm/pool.set" >/dev/null
# 16 places of 64 KiB at pseudo-random (unaligned) offsets in the master's data.
scatter() {
  /usr/bin/python3 - "$shm/master.part" "$1" <<'PY'
import os, random, sys
path, seed = sys.argv[1], int(sys.argv[2])
rng = random.Random(seed)
size = os.path.getsize(path)
with open(path, 'r+b') as f:
    for _ in range(16):
        off = rng.randrange(1 << 20, size - (64 << 10))
        f.seek(off)
        f.write(os.urandom(64 << 10))
PY
}
one() {
  local r=$1 kind=$2 args=$3
  local out
  out=$("$build/bin/rpmem" sync --json $args "$shm/pool.set")
  [[ $out == *compare_seconds* ]] || { echo "$0: rpmem sync failed: $out" >&2; exit 1; }
  /usr/bin/python3 -c 'import json,sys; d=json.loads(sys.argv[3]); x=d["replicas"][0]; print(sys.argv[1], sys.argv[2], "%.3f" % x["seconds"], d["moved_bytes"], "%.3f" % x["compare_seconds"], "%.3f" % x["local_checksum_seconds"])' "$r" "$kind" "$out"
}
echo "# round kind seconds moved_bytes compare_s local_checksum_s (size $size, load $(cut -d' ' -f1 /proc/loadavg))"
for r in $(seq 1 "$rounds"); do
  kinds=(full scatter insync)
  (( r % 2 == 0 )) && kinds=(insync scatter full)
  for k in "${kinds[@]}"; do
    case $k in
      full) one "$r" full --full ;;
      scatter) scatter "$r"; one "$r" scatter "" ;;
      insync) one "$r" insync "" ;;
    esac
  done
done
