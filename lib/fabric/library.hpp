// SPDX-License-Identifier: BSD-3-Clause
// libfabric's five exported functions, loaded at the first fabric call (see library.cpp for
// why our binaries do not link libfabric).
#pragma once

#include <rdma/fabric.h>

#include <csignal>
#include <cstdint>

namespace rpmem::fabric::library
{

/** The libfabric this process loads: soname and the symbol versions our headers bind to. */
inline constexpr const char *soname = "libfabric.so.1";

/** Loads libfabric if it is not loaded yet (thread-safe, once); throws rpmem::error (ELIBACC)
 *  saying what to install when it cannot be loaded. Every function below calls it. */
void load();

/** Starts load() and libfabric's provider initialization on a thread of its own (once per
 *  process) and returns: for a caller whose first fabric call comes after slower work (the
 *  client's SSH handshake and rpmemd's answer). Both take ~280 ms on Debian: libfabric1
 *  brings libinfinipath and libpsm2, whose constructors calibrate a clock by sleeping
 *  ~100 ms each, and the verbs provider reads /proc/kallsyms twice when initialized. A
 *  failure is not reported here: the first fabric call loads again and throws it. */
void load_ahead() noexcept;

/** What load_ahead() does on its thread, on this one: load() and the provider initialization,
 *  now (rpmemd's spares, which have nothing else to do). Reports nothing, as load_ahead(). */
void load_now() noexcept;

int getinfo(std::uint32_t version, const char *node, const char *service, std::uint64_t flags,
            const fi_info *hints, fi_info **info);
void freeinfo(fi_info *info) noexcept; // nullptr: nothing (and does not load libfabric)
fi_info *dupinfo(const fi_info *info);
inline fi_info *allocinfo()
{
	return dupinfo(nullptr);
}
int open_fabric(fi_fabric_attr *attr, fid_fabric **fabric, void *context);
/** fi_strerror; before libfabric is loaded (or if it cannot be), strerror for errno values. */
const char *strerror(int fi_code) noexcept;

/** The signals whose handlers loading libfabric keeps as they were (see library.cpp). */
inline constexpr int kept_signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGINT, SIGTERM};

/** A function loaded, and the symbol version it is taken at: the version a link against the
 *  libfabric of our headers records (dlvsym, not dlsym: a newer libfabric's default version
 *  may take newer structures than our headers describe). */
struct symbol {
	const char *name;
	const char *version;
};
inline constexpr symbol symbols[] = {{"fi_getinfo", "FABRIC_1.3"},
                                     {"fi_freeinfo", "FABRIC_1.3"},
                                     {"fi_dupinfo", "FABRIC_1.3"},
                                     {"fi_fabric", "FABRIC_1.1"},
                                     {"fi_strerror", "FABRIC_1.0"}};

} // namespace rpmem::fabric::library
