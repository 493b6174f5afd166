// SPDX-License-Identifier: BSD-3-Clause
//
// Why libfabric is loaded here and not linked: Debian's libfabric1 links the PSM providers'
// libinfinipath.so.4, whose constructor replaces the handlers of SIGSEGV, SIGBUS, SIGILL,
// SIGABRT, SIGINT and SIGTERM with one that prints a backtrace, writes a .btr file into the
// working directory and calls exit(1) from the signal handler. In a process linking
// libfabric, a crash or abort() then leaves no core dump and exits 1; Ctrl-C and SIGTERM run
// the atexit handlers from a signal handler; a sanitizer's report of a fault is replaced by
// that backtrace. Worse, libpmemobj loads librpmem when it opens a pool set with a REPLICA
// line: the application's own SIGTERM handler (its clean shutdown) would be replaced then.
//
// So no rpmem binary has libfabric in its DT_NEEDED list: the first fabric call loads it
// (dlopen), and where a handler of those signals now lives in an object the load brought in,
// it is put back as it was just before (a handler the application installed meanwhile, from
// another thread, stays). A process that never opens a remote pool never loads libfabric. (A signal
// that arrives during the load itself, ~200 ms once per process, still meets libinfinipath's
// handler: nothing can run before a library's constructor.)
#include "fabric/library.hpp"

#include "rpmem/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <link.h>
#include <mutex>
#include <pthread.h>
#include <string_view>
#include <thread>
#include <unistd.h>
#include <vector>

namespace rpmem::fabric::library
{
namespace
{

using getinfo_fn = int (*)(std::uint32_t, const char *, const char *, std::uint64_t,
                           const fi_info *, fi_info **);
using freeinfo_fn = void (*)(fi_info *);
using dupinfo_fn = fi_info *(*)(const fi_info *);
using fabric_fn = int (*)(fi_fabric_attr *, fid_fabric **, void *);
using strerror_fn = const char *(*)(int);

// open_library takes them by position.
static_assert(std::string_view(symbols[0].name) == "fi_getinfo" &&
              std::string_view(symbols[1].name) == "fi_freeinfo" &&
              std::string_view(symbols[2].name) == "fi_dupinfo" &&
              std::string_view(symbols[3].name) == "fi_fabric" &&
              std::string_view(symbols[4].name) == "fi_strerror");

struct table {
	getinfo_fn getinfo = nullptr;
	freeinfo_fn freeinfo = nullptr;
	dupinfo_fn dupinfo = nullptr;
	fabric_fn fabric = nullptr;
	strerror_fn strerror = nullptr;
};

bool same_handler(const struct sigaction &a, const struct sigaction &b)
{
	// sa_handler and sa_sigaction share storage; the flags say which one it is.
	return a.sa_handler == b.sa_handler &&
	       (a.sa_flags & SA_SIGINFO) == (b.sa_flags & SA_SIGINFO);
}

template <class Fn> Fn resolve(void *handle, const symbol &s)
{
	void *p = ::dlvsym(handle, s.name, s.version);
	if (!p) {
		const char *why = ::dlerror();
		throw rpmem::error(ELIBACC, fmt::format("{} has no {}@{} ({}): rpmem needs "
		                                        "libfabric 1.5 or later",
		                                        soname, s.name, s.version,
		                                        why ? why : "no such symbol"));
	}
	return reinterpret_cast<Fn>(p);
}

/** Where each object mapped now (the program, its libraries) begins, as dladdr's dli_fbase
 *  names it; sorted. */
std::vector<std::uintptr_t> mapped_objects()
{
	std::vector<std::uintptr_t> bases;
	::dl_iterate_phdr(
	    [](dl_phdr_info *info, std::size_t, void *out) {
		    for (int i = 0; i < info->dlpi_phnum; ++i) {
			    if (info->dlpi_phdr[i].p_type != PT_LOAD)
				    continue;
			    Dl_info where{};
			    const auto at = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
			    if (::dladdr(reinterpret_cast<void *>(at), &where))
				    static_cast<std::vector<std::uintptr_t> *>(out)->push_back(
				        reinterpret_cast<std::uintptr_t>(where.dli_fbase));
			    break;
		    }
		    return 0;
	    },
	    &bases);
	std::sort(bases.begin(), bases.end());
	return bases;
}

/** Whether `now` is a handler in an object that was not mapped before the load, i.e. one the
 *  load brought in (libinfinipath). A handler the application installed meanwhile from
 *  another thread lives in code mapped before (or is SIG_DFL or SIG_IGN), and stays. */
bool installed_by_load(const struct sigaction &now, const std::vector<std::uintptr_t> &before)
{
	if (!(now.sa_flags & SA_SIGINFO) &&
	    (now.sa_handler == SIG_DFL || now.sa_handler == SIG_IGN))
		return false;
	void *code = (now.sa_flags & SA_SIGINFO) ? reinterpret_cast<void *>(now.sa_sigaction)
	                                         : reinterpret_cast<void *>(now.sa_handler);
	Dl_info where{};
	if (!::dladdr(code, &where))
		return false;
	return !std::binary_search(before.begin(), before.end(),
	                           reinterpret_cast<std::uintptr_t>(where.dli_fbase));
}

table open_library()
{
	constexpr std::size_t n = std::size(kept_signals);
	struct sigaction before[n];
	for (std::size_t i = 0; i < n; ++i)
		::sigaction(kept_signals[i], nullptr, &before[i]);
	const auto objects_before = mapped_objects();
	::dlerror();
	void *handle = ::dlopen(soname, RTLD_NOW | RTLD_LOCAL);
	const char *why = handle ? nullptr : ::dlerror();
	table t;
	// Even after a failed dlopen: its dependencies' constructors may have run.
	for (std::size_t i = 0; i < n; ++i) {
		struct sigaction now {
		};
		::sigaction(kept_signals[i], nullptr, &now);
		if (!same_handler(now, before[i]) && installed_by_load(now, objects_before))
			::sigaction(kept_signals[i], &before[i], nullptr);
	}
	if (!handle)
		throw rpmem::error(ELIBACC,
		                   fmt::format("cannot load {} ({}): install libfabric (Debian: "
		                               "apt install libfabric1)",
		                               soname, why ? why : "unknown reason"));
	t.getinfo = resolve<getinfo_fn>(handle, symbols[0]);
	t.freeinfo = resolve<freeinfo_fn>(handle, symbols[1]);
	t.dupinfo = resolve<dupinfo_fn>(handle, symbols[2]);
	t.fabric = resolve<fabric_fn>(handle, symbols[3]);
	t.strerror = resolve<strerror_fn>(handle, symbols[4]);
	return t; // the handle stays open for the life of the process
}

/** Set once loading succeeded; what freeinfo and strerror read without loading. */
std::atomic<const table *> loaded{nullptr};

const table &get()
{
	// A failed load throws out of the initializer: the next call tries again.
	static const table t = open_library();
	loaded.store(&t, std::memory_order_release);
	return t;
}

/** fi_getinfo's first call initializes every provider built into libfabric (Debian's verbs
 *  provider reads /proc/kallsyms twice there: ~80 ms here). A provider name no provider has
 *  makes the call do that and nothing else. */
void init_providers(const table &t)
{
	fi_info *hints = t.dupinfo(nullptr);
	if (!hints)
		return;
	hints->fabric_attr->prov_name = ::strdup("rpmem-no-such-provider"); // freed with hints
	fi_info *found = nullptr;
	t.getinfo(FI_VERSION(1, 4), nullptr, nullptr, 0, hints, &found);
	t.freeinfo(found);
	t.freeinfo(hints);
}

} // namespace

void load()
{
	get();
}

void load_now() noexcept
{
	try {
		init_providers(get());
	} catch (...) {
		// The first fabric call loads again, and throws it.
	}
	// libfabric's provider scan leaves this thread's last dlopen error pending: glibc holds
	// it in a 24-byte block it frees only after the sanitizers' thread-exit hook, so a
	// process exiting in between reported it as leaked (LeakSanitizer, 3 runs in 40 under
	// load). Reading the error until there is none frees it here.
	while (::dlerror() != nullptr) {
	}
}

namespace
{

/** load_ahead's thread, as the process's exit and fork see it. Never destroyed: read while
 *  the process exits. No mutex: exit() may be called from a signal handler (libinfinipath's,
 *  during the load), on any thread, that one included. */
struct ahead_thread {
	std::atomic<bool> running{false};
	std::atomic<pid_t> owner{0}; // the process it runs in (a forked child has no such thread)
	std::atomic<std::thread::id> id{};

	static ahead_thread &get()
	{
		static ahead_thread *const t = new ahead_thread();
		return *t;
	}
	/** Until the thread is done (at most 10 s): in the process that has it, and not on it. */
	void wait_done()
	{
		if (owner.load() != ::getpid() || id.load() == std::this_thread::get_id())
			return;
		for (int i = 0; i < 10000 && running.load(); ++i)
			std::this_thread::sleep_for(std::chrono::milliseconds(1));
	}
	/** At exit: libfabric's destructor must not run while the thread is still inside
	 *  libfabric (a program that exits right after a failed open crashed there, 2 runs in
	 *  8). atexit handlers run before libraries' destructors; loading takes ~300 ms. */
	static void wait_at_exit() { get().wait_done(); }
	/** Before fork: a child made while the thread is inside the dynamic loader or
	 *  libfabric's initialization would inherit their locks held, and hang at its first
	 *  fabric call. posix_spawn (how rpmem starts ssh) runs no fork handlers. */
	static void wait_before_fork() { get().wait_done(); }
};

} // namespace

void load_ahead() noexcept
{
	static std::once_flag once;
	try {
		std::call_once(once, [] {
			auto &t = ahead_thread::get();
			t.running.store(true);
			t.owner.store(::getpid());
			// librpmem is linked -z nodelete: these handlers stay mapped even where
			// libpmemobj dlcloses it.
			std::atexit(ahead_thread::wait_at_exit);
			::pthread_atfork(ahead_thread::wait_before_fork, nullptr, nullptr);
			try {
				std::thread([] {
					auto &self = ahead_thread::get();
					self.id.store(std::this_thread::get_id());
					load_now();
					self.running.store(false);
				}).detach();
			} catch (...) {
				t.running.store(false);
				throw;
			}
		});
	} catch (...) {
		// No thread: the first fabric call loads libfabric itself.
	}
}

int getinfo(std::uint32_t version, const char *node, const char *service, std::uint64_t flags,
            const fi_info *hints, fi_info **info)
{
	return get().getinfo(version, node, service, flags, hints, info);
}

void freeinfo(fi_info *info) noexcept
{
	// An fi_info exists only if libfabric made it.
	if (const table *t = loaded.load(std::memory_order_acquire); info && t)
		t->freeinfo(info);
}

fi_info *dupinfo(const fi_info *info)
{
	return get().dupinfo(info);
}

int open_fabric(fi_fabric_attr *attr, fid_fabric **fabric, void *context)
{
	return get().fabric(attr, fabric, context);
}

const char *strerror(int fi_code) noexcept
{
	if (const table *t = loaded.load(std::memory_order_acquire))
		return t->strerror(fi_code);
	return std::strerror(fi_code);
}

} // namespace rpmem::fabric::library
