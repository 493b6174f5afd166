#!/usr/bin/env bash
# The main job on an embedded default, on one machine: installs dependencies, builds, starts a
# private sshd on loopback with generated keys (never touching ~/.ssh), then creates a remote
# pool through rpmemd over SSH, replicates data, reopens it, reads it back and removes it.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
scripts/install-deps.sh
scripts/build.sh >/dev/null
build=$(cd "${BUILD_DIR:-build}" && pwd)

work=$(mktemp -d /tmp/rpmem-demo.XXXXXX)
cleanup() { scripts/private-sshd.sh stop "$work/sshd" >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT

# The replica node's side: a poolset directory with the pool set rpmemd will create.
mkdir -p "$work/replica/parts"
cat > "$work/replica/demo.set" <<SET
PMEMPOOLSET
64M $work/replica/parts/demo.part
SET

eval "$(scripts/private-sshd.sh start "$work/sshd")"
export RPMEM_CMD="$build/bin/rpmemd --poolset-dir=$work/replica --log-file=$work/rpmemd.log --log-level=notice"
echo "replica node: $RPMEM_DEMO_TARGET (private sshd), rpmemd from $build/bin"
"$build/bin/rpmem-demo" "$RPMEM_DEMO_TARGET" demo.set
echo "--- rpmemd log ---"
cat "$work/rpmemd.log"
