#!/usr/bin/env bash
# A C program compiled against the installed librpmem.h and linked with -lrpmem through
# `pkg-config librpmem` runs create -> persist -> read -> close against the installed rpmemd,
# over a private sshd. Usage: pkgconfig.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=${1:?build dir}
src=${2:?source dir}
work=$(mktemp -d /tmp/rpmem-pkgconfig.XXXXXX)
cleanup() { "$src/scripts/private-sshd.sh" stop "$work/sshd" >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT

cmake --install "$build" --prefix "$work/prefix" >/dev/null
pc=$(dirname "$(find "$work/prefix" -name librpmem.pc | head -1)")
export PKG_CONFIG_PATH=$pc
cc -Wall -Werror "$src/examples/01-c-abi.c" $(pkg-config --cflags --libs librpmem) -o "$work/01-c-abi"
libdir=$(pkg-config --variable=libdir librpmem)
[ -e "$libdir/librpmem.so.1" ] || { echo "FAIL: $libdir/librpmem.so.1 not installed"; exit 1; }
[ -x "$work/prefix/bin/rpmemd" ] || { echo "FAIL: rpmemd not installed"; exit 1; }

mkdir -p "$work/replica/parts"
printf 'PMEMPOOLSET\n16M %s/replica/parts/c.part\n' "$work" > "$work/replica/c.set"
eval "$("$src/scripts/private-sshd.sh" start "$work/sshd")"
export RPMEM_CMD="$work/prefix/bin/rpmemd --poolset-dir=$work/replica --log-file=$work/rpmemd.log"
out=$(LD_LIBRARY_PATH=$libdir "$work/01-c-abi" "$RPMEM_DEMO_TARGET" c.set)
echo "$out"
grep -q 'read back from the replica: "Hello, remote persistent memory!"' <<<"$out"
grep -q 'closed and removed: OK' <<<"$out"
[ ! -e "$work/replica/parts/c.part" ] || { echo "FAIL: the pool was not removed"; exit 1; }
echo "OK: pkg-config build of 01-c-abi ran create, persist, read, close, remove"
