#!/usr/bin/env bash
# librpmem.so.1 exports exactly PMDK's 12 functions under version node LIBRPMEM_1.0, and its
# SONAME is librpmem.so.1: no C++ or dependency symbol leaks.
set -euo pipefail
lib=${1:?usage: $0 path/to/librpmem.so.1}
expected="rpmem_check_version rpmem_close rpmem_create rpmem_deep_persist rpmem_drain rpmem_errormsg rpmem_flush rpmem_open rpmem_persist rpmem_read rpmem_remove rpmem_set_attr"
defined=$(nm -D --with-symbol-versions --defined-only "$lib" | awk '$2 != "A" {print $3}' | sort)
names=$(echo "$defined" | sed 's/@@LIBRPMEM_1.0$//' | tr '\n' ' ' | sed 's/ $//')
if [ "$names" != "$expected" ]; then
  echo "FAIL: exported symbols differ"; echo "expected: $expected"; echo "got:      $names"; exit 1
fi
if grep -qv '@@LIBRPMEM_1.0$' <<<"$defined"; then
  echo "FAIL: a symbol is not in version node LIBRPMEM_1.0:"; echo "$defined" | grep -v '@@LIBRPMEM_1.0$'; exit 1
fi
soname=$(readelf -d "$lib" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
[ "$soname" = librpmem.so.1 ] || { echo "FAIL: SONAME is '$soname'"; exit 1; }
echo "OK: 12 symbols @@LIBRPMEM_1.0, SONAME $soname"
