#!/usr/bin/env bash
# Builds what compare.sh needs, outside the project: PMDK 1.12.1 with librpmem, rpmemd and
# pmembench (needs a PMDK git mirror or tarball: PMDK_SRC, a directory holding the 1.12.1 tree,
# or PMDK_GIT, a clone to take tag 1.12.1 from), and close_time against rpmem's librpmem.h.
# Nothing is installed system-wide: compare.sh picks each library with LD_LIBRARY_PATH.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${PMDK_TREE:-/tmp/pmdk-cmp/src}
apt-get install -y libfabric-dev libglib2.0-dev pkg-config >/dev/null
if [ ! -f "$out/Makefile" ]; then
  mkdir -p "$out"
  if [ -n "${PMDK_GIT:-}" ]; then git -C "$PMDK_GIT" archive 1.12.1 | tar -x -C "$out"
  else cp -a "$PMDK_SRC/." "$out/"; fi
fi
echo 1.12.1 > "$out/.version"
make -C "$out/src" -j"$(nproc)" BUILD_RPMEM=y NDCTL_ENABLE=n EXTRA_CFLAGS=-Wno-error DOC=n
make -C "$out/src/benchmarks" -j"$(nproc)" BUILD_RPMEM=y NDCTL_ENABLE=n EXTRA_CFLAGS=-Wno-error
gcc -O2 -I"$here/../../include/rpmem" -o "${CLOSE_TIME:-/tmp/pmdk-cmp/close_time}" \
  "$here/close_time.c" -L"$here/../../build/lib" -l:librpmem.so.1
