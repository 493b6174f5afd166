// SPDX-License-Identifier: BSD-3-Clause
// RPMEM_API marks what librpmemcpp.so.0 exports: the public classes of the C++ API
// (rpmem::pool, rpmem::replicated_pool, rpmem::error). The library is compiled with
// -fvisibility=hidden and linked with -Wl,--exclude-libs,ALL, so nothing else leaves it
// (tests/abi/exports_cpp.sh checks). For applications the attribute changes nothing.
#pragma once

#if defined(__GNUC__) || defined(__clang__)
#define RPMEM_API __attribute__((visibility("default")))
#define RPMEM_LOCAL __attribute__((visibility("hidden")))
#else
#define RPMEM_API
#define RPMEM_LOCAL
#endif
