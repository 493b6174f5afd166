#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Builds the Debian packages with CPack (cmake/install.cmake):
#   librpmem1     librpmem.so.1 (stock libpmemobj/libpmempool load it for REPLICA lines),
#                 librpmemcpp.so.0 (the C++ API)
#   librpmem-dev  librpmem.h, include/rpmem/*.hpp, librpmem.pc, find_package(rpmem), API man pages
#   rpmemd        rpmemd, /etc/rpmemd/rpmemd.conf, rpmemd(1) (replica nodes)
#   rpmem-tools   rpmem, rpmem-bench, rpmem(1), rpmem-poolset(5)
#   and a -dbgsym .ddeb with the debug symbols of each
#
#   scripts/package.sh [BUILD_DIR [OUT_DIR]]     (default: build-package, its packages/)
#
# An optimized build with debug symbols (stripped into the -dbgsym packages) and the prefix
# /usr (Debian paths: lib/<multiarch>, /etc), without tests.
# Install on a clean machine: apt install ./librpmem1_*.deb ./rpmemd_*.deb
set -eu

src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$src/build-package}
out=${2:-$build/packages}

cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX=/usr \
	-DRPMEM_BUILD_TESTS=OFF -DRPMEM_WERROR=OFF
cmake --build "$build" -j "${JOBS:-2}"
mkdir -p "$out"
cpack --config "$build/CPackConfig.cmake" -B "$out"
rm -rf "$out/_CPack_Packages"
for deb in "$out"/*.deb "$out"/*.ddeb; do
	echo "$deb"
	dpkg-deb -f "$deb" Package Version Depends | sed 's/^/  /'
done
