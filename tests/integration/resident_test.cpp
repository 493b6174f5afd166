// SPDX-License-Identifier: BSD-3-Clause
// The resident rpmemd (`--resident`, daemon/resident.hpp) through the private sshd and the
// real rpmemd: which process serves a session, what its data becomes, and what a killed
// session, a killed resident, an idle one and a removed socket do.
#include "process.hpp"
#include "replica_fixture.hpp"
#include "resident_protocol.hpp"
#include "support/proc_state.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <functional>
#include <poll.h>
#include <string>
#include <sys/fsuid.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace rpmem::test;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace
{

constexpr std::size_t hdr = 4096;

struct rpmemd_process {
	pid_t pid = -1;
	pid_t ppid = -1;
	std::string argv0; // rpmemd-resident, rpmemd-spare, rpmemd-session, or the path (a front)
};

/** Every live rpmemd process whose command line names `dir`. */
std::vector<rpmemd_process> rpmemd_processes(const std::string &dir)
{
	std::vector<rpmemd_process> out;
	for (const auto &e : fs::directory_iterator("/proc")) {
		const auto name = e.path().filename().string();
		if (name.find_first_not_of("0123456789") != std::string::npos)
			continue;
		std::error_code ec;
		const auto exe = fs::read_symlink(e.path() / "exe", ec).string();
		const std::string cmdline = slurp(e.path() / "cmdline");
		if (exe.find("rpmemd") == std::string::npos ||
		    cmdline.find(dir) == std::string::npos)
			continue;
		const std::string stat = slurp(e.path() / "stat");
		const auto close = stat.rfind(')');
		if (close == std::string::npos || close + 2 >= stat.size() ||
		    stat[close + 2] == 'Z')
			continue;
		rpmemd_process p;
		p.pid = static_cast<pid_t>(std::stol(name));
		p.ppid = static_cast<pid_t>(std::stol(stat.substr(close + 4)));
		p.argv0 = cmdline.substr(0, cmdline.find('\0'));
		out.push_back(p);
	}
	return out;
}

std::vector<rpmemd_process> named(const std::string &dir, const std::string &argv0)
{
	auto all = rpmemd_processes(dir);
	std::erase_if(all, [&](const rpmemd_process &p) { return p.argv0 != argv0; });
	return all;
}

/** Polls `ready` every 20 ms for up to `limit`: a bound on a hang, not a timing claim. */
bool wait_for(const std::function<bool()> &ready, std::chrono::milliseconds limit)
{
	const auto until = std::chrono::steady_clock::now() + limit;
	while (!ready()) {
		if (std::chrono::steady_clock::now() > until)
			return false;
		std::this_thread::sleep_for(20ms);
	}
	return true;
}

replica_options resident_options(const std::string &idle = "30")
{
	replica_options o;
	o.daemon_args = "--resident=" + idle;
	return o;
}

/** Creates pool.set, writes and persists `fill` over the first page of data, closes; then,
 *  unless told not to, waits until the resident this started has both spares ready. */
void first_session(remote_setup &fx, std::uint8_t fill, bool wait_for_spares = true)
{
	unsigned nlanes = 2;
	auto pool = fx.create(nlanes);
	std::memset(fx.local.data() + hdr, fill, 4096);
	pool->persist(hdr, 4096, 0, 0);
	pool->close();
	INFO("rpmemd's log:\n" << fx.node.log_text());
	REQUIRE(fx.node.log_text().find("this rpmemd serves its session itself: no resident "
	                                "rpmemd at") != std::string::npos);
	if (wait_for_spares)
		REQUIRE(wait_for([&] { return count(fx.node.log_text(), " is ready after ") >= 2; },
		                 30s));
}

/** Writes `fill` over the first page of data, persists it, and checks the replica holds it. */
template <class Pool> void persist_page(remote_setup &fx, Pool &pool, std::uint8_t fill)
{
	std::memset(fx.local.data() + hdr, fill, 4096);
	pool.persist(hdr, 4096, 0, 0);
	CHECK(slurp(fx.node.part("pool.set")).substr(hdr, 4096) ==
	      std::string(4096, static_cast<char>(fill)));
}

/** The resident's socket in the fixture's status directory. */
std::string resident_socket(const remote_setup &fx)
{
	for (const auto &e : fs::directory_iterator(fx.node.dir() / "sessions"))
		if (e.path().extension() == ".sock")
			return e.path().string();
	return {};
}

/** A connection to the resident's socket, as a front makes it; -1 with errno on failure. */
int connect_to(const std::string &path)
{
	const int s = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	sockaddr_un a{};
	a.sun_family = AF_UNIX;
	std::strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
	if (s >= 0 && ::connect(s, reinterpret_cast<const sockaddr *>(&a), sizeof a) != 0) {
		const int e = errno;
		::close(s);
		errno = e;
		return -1;
	}
	return s;
}

/** What the resident answers on `sock` within 10 s: the refusal's reason, or what came. */
std::string answer(int sock)
{
	namespace r = rpmemd::resident;
	int err = 0;
	auto p = r::receive_packet(sock, 10000, &err);
	if (!p)
		return fmt::format("no packet ({})", err ? std::strerror(err) : "EOF");
	auto m = r::decode(p->bytes);
	if (!m)
		return "a malformed answer";
	if (m->what != r::kind::refuse)
		return fmt::format("a message of kind {}", static_cast<unsigned>(m->what));
	return "refused: " + m->reason;
}

/** The fronts among `dir`'s rpmemds: those sshd started, named by their path (a resident, a
 *  spare and a session's process bear names of their own, "rpmemd-..."). */
std::vector<rpmemd_process> fronts(const std::string &dir)
{
	auto all = rpmemd_processes(dir);
	std::erase_if(all,
	              [](const rpmemd_process &p) { return p.argv0.rfind("rpmemd-", 0) == 0; });
	return all;
}

/** Whether `pid` sleeps in poll(2) (x86-64 poll or ppoll): a front that sent its request
 *  waits so for the resident's answer. */
bool in_poll(pid_t pid)
{
	const std::string s = slurp(fs::path("/proc") / std::to_string(pid) / "syscall");
	return proc_state(fmt::format("/proc/{}/stat", pid)) == 'S' &&
	       (s.rfind("7 ", 0) == 0 || s.rfind("271 ", 0) == 0);
}

/** Bytes waiting to be read on the socket that is fd `fd` of process `pid` (pidfd_getfd;
 *  the copy is closed at once), or -1. */
int queued(pid_t pid, int fd)
{
	const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
	if (pidfd < 0)
		return -1;
	const int copy = static_cast<int>(::syscall(SYS_pidfd_getfd, pidfd, fd, 0));
	::close(pidfd);
	int n = -1;
	if (copy >= 0 && ::ioctl(copy, FIONREAD, &n) != 0)
		n = -1;
	if (copy >= 0)
		::close(copy);
	return n;
}

/** Whether the other end of the socket that is fd `fd` of process `pid` is closed (every
 *  process that held it closed it or ended). */
bool peer_closed(pid_t pid, int fd)
{
	const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
	if (pidfd < 0)
		return false;
	const int copy = static_cast<int>(::syscall(SYS_pidfd_getfd, pidfd, fd, 0));
	::close(pidfd);
	if (copy < 0)
		return false;
	pollfd p{copy, POLLRDHUP, 0};
	const bool closed = ::poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLRDHUP)) != 0;
	::close(copy);
	return closed;
}

/** The front's socket to the resident: its one socket (its stdin and stdout are sshd's
 *  pipes). */
int socket_fd(pid_t pid)
{
	for (const auto &e :
	     fs::directory_iterator(fs::path("/proc") / std::to_string(pid) / "fd")) {
		std::error_code ec;
		if (fs::read_symlink(e.path(), ec).string().rfind("socket:", 0) == 0)
			return std::stoi(e.path().filename().string());
	}
	return -1;
}

/** A session started by a real front and stopped in the middle of its hand-over: the front
 *  sent its request to a frozen resident and was frozen in turn; the resident, continued,
 *  gave it to a spare. With `accepted`, that spare's acceptance waits in the front's socket
 *  (the spare waits for the channel); without, the spares were frozen first and the one
 *  given the session has not read it. The pool is opened on a thread of its own. */
struct stopped_handover {
	remote_setup &fx;
	std::string dir;
	pid_t resident = -1, front = -1, spare = -1;
	std::vector<pid_t> frozen_spares;
	std::string open_error; // what the open threw; empty while it runs or if it succeeded
	bool persisted = false; // the open succeeded, and a page persisted through it arrived
	std::jthread opener;    // joined when this ends, after thaw_ continued what it froze
	/** Continues every process frozen here, also when a REQUIRE ends the test early. */
	struct thaw {
		stopped_handover &h;
		~thaw()
		{
			// Never kill(-1): that signals every process.
			for (pid_t p : {h.resident, h.front})
				if (p > 0)
					::kill(p, SIGCONT);
			for (pid_t p : h.frozen_spares)
				::kill(p, SIGCONT);
		}
	} thaw_{*this};

	stopped_handover(remote_setup &f, bool accepted) : fx(f), dir(f.node.dir().string())
	{
		const auto residents = named(dir, "rpmemd-resident");
		REQUIRE(residents.size() == 1);
		resident = residents[0].pid;
		// A front that gave up waiting before it was frozen (its second ran out on a
		// loaded machine) serves its session itself: that attempt is let finish, and the
		// next one made.
		for (int attempt = 1;; ++attempt) {
			REQUIRE(attempt <= 3);
			if (attempt_handover(accepted))
				break;
			::kill(front, SIGCONT);
			for (pid_t p : frozen_spares)
				::kill(p, SIGCONT);
			frozen_spares.clear();
			opener.join();
		}
		if (accepted) {
			const int fd = socket_fd(front);
			REQUIRE(fd >= 0);
			REQUIRE(wait_for([&] { return queued(front, fd) > 0; }, 30s));
		}
	}
	/** One try: whether the resident gave the frozen front's session to a spare. */
	bool attempt_handover(bool accepted)
	{
		REQUIRE(freeze(resident));
		open_error.clear();
		persisted = false;
		opener = std::jthread([this] {
			try {
				unsigned nlanes = 2;
				auto pool = fx.open(nlanes);
				// No Catch assertion here: it is not thread-safe.
				std::memset(fx.local.data() + hdr, 0x66, 4096);
				pool->persist(hdr, 4096, 0, 0);
				pool->close();
				persisted = slurp(fx.node.part("pool.set")).substr(hdr, 4096) ==
				            std::string(4096, '\x66');
			} catch (const std::exception &e) {
				open_error = e.what();
				if (open_error.empty())
					open_error = "(an error without a message)";
			}
		});
		// The front sent its request and waits for the answer (for a second: it then
		// serves the session itself).
		REQUIRE(wait_for(
		    [&] {
			    const auto waiting = fronts(dir);
			    return waiting.size() == 1 && in_poll(waiting[0].pid);
		    },
		    30s));
		front = fronts(dir).at(0).pid;
		if (!freeze(front))
			return false; // done serving its session already
		if (!accepted)
			for (const auto &p : named(dir, "rpmemd-spare")) {
				REQUIRE(freeze(p.pid));
				frozen_spares.push_back(p.pid);
			}
		::kill(resident, SIGCONT);
		const std::string handed =
		    fmt::format("session of pid {} handed to spare pid ", front);
		const std::string not_handed = fmt::format("resident: pid {} ", front);
		INFO("rpmemd's log:\n" << fx.node.log_text());
		REQUIRE(wait_for(
		    [&] {
			    const auto log = fx.node.log_text();
			    return has(log, handed) || has(log, not_handed);
		    },
		    30s));
		const auto log = fx.node.log_text();
		if (!has(log, handed))
			return false;
		spare = static_cast<pid_t>(std::stol(log.substr(log.find(handed) + handed.size())));
		REQUIRE(spare > 0);
		return true;
	}
};

/** After an interrupted hand-over the resident goes on: a replacement spare warms (more than
 *  `ready_before` "is ready" lines), and the next session is handed to one and persists
 *  `fill` to the pool (no process kept its lock). */
void next_session_handed_over(remote_setup &fx, std::size_t ready_before, std::uint8_t fill)
{
	REQUIRE(wait_for(
	    [&] { return count(fx.node.log_text(), " is ready after ") > ready_before; }, 30s));
	const auto handed_before = count(fx.node.log_text(), "handed to spare pid");
	unsigned nlanes = 2;
	auto pool = fx.open(nlanes);
	persist_page(fx, *pool, fill);
	pool->close();
	INFO("rpmemd's log:\n" << fx.node.log_text());
	CHECK(count(fx.node.log_text(), "handed to spare pid") == handed_before + 1);
}

} // namespace

TEST_CASE("resident: later sessions are served by a warm spare, and their data arrives",
          "[resident]")
{
	remote_setup fx(8 << 20, {"8M"}, resident_options());
	const std::string dir = fx.node.dir().string();
	first_session(fx, 0x11);
	const auto residents = named(dir, "rpmemd-resident");
	REQUIRE(residents.size() == 1);
	CHECK(named(dir, "rpmemd-spare").size() == 2);

	for (std::uint8_t round = 0; round < 3; ++round) {
		// Each session uses a spare up; its replacement warms before the next round opens
		// (a session that finds none ready is served by its front: tested below).
		REQUIRE(wait_for(
		    [&] { return count(fx.node.log_text(), " is ready after ") >= 2u + round; },
		    30s));
		unsigned nlanes = 2;
		auto pool = fx.open(nlanes);
		// The session runs in a former spare, a child of the resident, named as such.
		const auto sessions = named(dir, "rpmemd-session");
		REQUIRE(sessions.size() == 1);
		CHECK(sessions[0].ppid == residents[0].pid);
		CHECK(slurp(fs::path("/proc") / std::to_string(sessions[0].pid) / "comm") ==
		      "rpmemd\n");
		std::memset(fx.local.data() + hdr, 0x20 + round, 4096);
		pool->persist(hdr, 4096, 0, 0);
		CHECK(slurp(fx.node.part("pool.set")).substr(hdr, 4096) ==
		      std::string(4096, static_cast<char>(0x20 + round)));
		pool->close();
		CHECK(wait_for([&] { return named(dir, "rpmemd-session").empty(); }, 10s));
	}
	const auto log = fx.node.log_text();
	INFO("rpmemd's log:\n" << log);
	CHECK(count(log, "handed to spare pid") == 3);
	CHECK(count(log, "taken by a spare of the resident") == 3);
	// One resident served them all, and it is still there for the next. (A spare just forked
	// bears its parent's name until it renames itself: a child of the resident is not one.)
	auto still = named(dir, "rpmemd-resident");
	std::erase_if(still, [&](const rpmemd_process &p) { return p.ppid == residents[0].pid; });
	REQUIRE(still.size() == 1);
	CHECK(still[0].pid == residents[0].pid);
}

TEST_CASE("resident: with no spare ready, the front serves its session itself at once",
          "[resident]")
{
	remote_setup fx(8 << 20, {"8M"}, resident_options());
	const std::string dir = fx.node.dir().string();
	first_session(fx, 0x11);
	// Both ready spares killed: the resident waits a second or more before it replaces
	// spares that died before taking a session, and a replacement needs ~0.3 s to warm.
	// Meanwhile every new spare is stopped at birth, so none can be ready even on a machine
	// too loaded to open within that time.
	for (const auto &p : named(dir, "rpmemd-spare"))
		REQUIRE(::kill(p.pid, SIGKILL) == 0);
	std::vector<pid_t> stopped;
	std::atomic<bool> done{false};
	std::thread stopper([&] {
		while (!done.load()) {
			for (const auto &p : named(dir, "rpmemd-spare"))
				if (std::find(stopped.begin(), stopped.end(), p.pid) ==
				        stopped.end() &&
				    ::kill(p.pid, SIGSTOP) == 0)
					stopped.push_back(p.pid);
			std::this_thread::sleep_for(2ms);
		}
	});
	const auto ready_before = count(fx.node.log_text(), " is ready after ");
	unsigned nlanes = 2;
	auto pool = fx.open(nlanes);
	persist_page(fx, *pool, 0x55);
	pool->close();
	done.store(true);
	stopper.join();
	const auto log = fx.node.log_text();
	INFO("rpmemd's log:\n" << log);
	CHECK(log.find("serves its session itself: no spare is ready yet") != std::string::npos);
	CHECK(count(log, "handed to spare pid") == 0);
	CHECK(count(log, " is ready after ") == ready_before);
	for (pid_t p : stopped) {
		::kill(p, SIGKILL);
		::kill(p, SIGCONT);
	}
}

TEST_CASE("resident: frozen, it holds a session's start at most a second, then the front "
          "serves it",
          "[resident]")
{
	remote_setup fx(8 << 20, {"8M"}, resident_options());
	const std::string dir = fx.node.dir().string();
	first_session(fx, 0x11);
	const auto residents = named(dir, "rpmemd-resident");
	REQUIRE(residents.size() == 1);
	REQUIRE(freeze(residents[0].pid));
	// The front connects (the kernel queues it) and asks; nothing answers.
	unsigned nlanes = 2;
	auto pool = fx.open(nlanes);
	persist_page(fx, *pool, 0x66);
	pool->close();
	::kill(residents[0].pid, SIGCONT);
	const auto log = fx.node.log_text();
	INFO("rpmemd's log:\n" << log);
	CHECK(log.find("serves its session itself: no answer from the resident within 1000 ms") !=
	      std::string::npos);
	CHECK(count(log, "handed to spare pid") == 0);
}

TEST_CASE("resident: a front killed after its session was handed over and before it passed its "
          "channel: the spare ends without a session, and the next session is served",
          "[resident]")
{
	remote_setup fx(8 << 20, {"8M"}, resident_options("600"));
	first_session(fx, 0x11);
	const auto ready_before = count(fx.node.log_text(), " is ready after ");
	{
		stopped_handover h(fx, true);
		REQUIRE(::kill(h.front, SIGKILL) == 0);
		h.opener.join();
		INFO("the open: " << h.open_error);
		CHECK(!h.open_error.empty()); // its rpmemd is gone: the client is told
		// The spare that accepted it sees the front hang up and ends; nothing else does.
		CHECK(wait_for(
		    [&] {
			    return !fs::exists(fmt::format("/proc/{}", h.spare)) ||
			           proc_state(fmt::format("/proc/{}/stat", h.spare)) == 'Z';
		    },
		    10s));
		INFO("rpmemd's log:\n" << fx.node.log_text());
		CHECK(has(
		    fx.node.log_text(),
		    fmt::format("the rpmemd sshd started for a session (pid {}) did not hand its "
		                "channel over (it hung up)",
		                h.front)));
		CHECK(named(fx.node.dir().string(), "rpmemd-resident").size() == 1);
	}
	next_session_handed_over(fx, ready_before, 0x77);
}

TEST_CASE("resident: a spare killed after it accepted a session and before it had the channel: "
          "the session ends as killed or is served by its front, and the next is served",
          "[resident]")
{
	remote_setup fx(8 << 20, {"8M"}, resident_options("600"));
	first_session(fx, 0x11);
	const auto ready_before = count(fx.node.log_text(), " is ready after ");
	const std::string killed_line = "was killed by signal 9";
	SECTION("the front passed its channel before the resident saw the spare end")
	{
		stopped_handover h(fx, true);
		// The resident frozen: the channel goes to its end of the connection, still open.
		REQUIRE(freeze(h.resident));
		REQUIRE(::kill(h.spare, SIGKILL) == 0);
		REQUIRE(::kill(h.front, SIGCONT) == 0);
		// Standing in (stand_in renames it) for a process that is gone ...
		REQUIRE(wait_for(
		    [&] {
			    return slurp(fmt::format("/proc/{}/comm", h.front)) == "rpmemd-relay\n";
		    },
		    30s));
		// ... until the resident, continued, tells it how that process ended: it ends so.
		::kill(h.resident, SIGCONT);
		h.opener.join();
		INFO("rpmemd's log:\n" << fx.node.log_text());
		INFO("the open: " << h.open_error);
		CHECK(has(h.open_error, "ended before it answered (killed by signal SIGKILL)"));
		CHECK(has(fx.node.log_text(),
		          fmt::format("the session's process {} {}", h.spare, killed_line)));
		CHECK(wait_for([&] { return fronts(fx.node.dir().string()).empty(); }, 10s));
		CHECK(named(fx.node.dir().string(), "rpmemd-resident").size() == 1);
	}
	SECTION("the resident saw the spare end first")
	{
		stopped_handover h(fx, true);
		REQUIRE(::kill(h.spare, SIGKILL) == 0);
		// The resident reaps it and closes its end: the front's channel finds no one, and
		// the front serves the session itself (no process had the channel).
		const int fd = socket_fd(h.front);
		REQUIRE(fd >= 0);
		REQUIRE(wait_for([&] { return peer_closed(h.front, fd); }, 30s));
		REQUIRE(::kill(h.front, SIGCONT) == 0);
		h.opener.join();
		INFO("rpmemd's log:\n" << fx.node.log_text());
		INFO("the open: " << h.open_error);
		CHECK(h.open_error.empty());
		CHECK(h.persisted);
		CHECK(has(fx.node.log_text(),
		          fmt::format("the session's process {} {}", h.spare, killed_line)));
		CHECK(has(fx.node.log_text(),
		          "this rpmemd serves its session itself: the channel could not be handed "
		          "over"));
	}
	next_session_handed_over(fx, ready_before, 0x78);
}

TEST_CASE("resident: a front stalled past the spare's wait for its channel: the spare ends, and "
          "the front serves the session itself",
          "[resident]")
{
	remote_setup fx(8 << 20, {"8M"}, resident_options("600"));
	first_session(fx, 0x11);
	const auto ready_before = count(fx.node.log_text(), " is ready after ");
	{
		stopped_handover h(fx, true);
		// The spare waits 5 s for the channel of the front it accepted, then ends.
		const std::string gave_up = fmt::format(
		    "the rpmemd sshd started for a session (pid {}) did not hand its channel over "
		    "(nothing within 5000 ms)",
		    h.front);
		REQUIRE(wait_for([&] { return has(fx.node.log_text(), gave_up); }, 60s));
		const int fd = socket_fd(h.front);
		REQUIRE(fd >= 0);
		REQUIRE(wait_for([&] { return peer_closed(h.front, fd); }, 30s));
		REQUIRE(::kill(h.front, SIGCONT) == 0);
		h.opener.join();
		INFO("rpmemd's log:\n" << fx.node.log_text());
		INFO("the open: " << h.open_error);
		CHECK(h.open_error.empty());
		CHECK(h.persisted);
		CHECK(has(fx.node.log_text(),
		          "this rpmemd serves its session itself: the channel could not be handed "
		          "over"));
	}
	next_session_handed_over(fx, ready_before, 0x7a);
}

TEST_CASE("resident: a spare killed before it read the session it was given: the front serves "
          "the session itself",
          "[resident]")
{
	remote_setup fx(8 << 20, {"8M"}, resident_options("600"));
	first_session(fx, 0x11);
	const auto ready_before = count(fx.node.log_text(), " is ready after ");
	{
		stopped_handover h(fx, false);
		REQUIRE(::kill(h.spare, SIGKILL) == 0);
		REQUIRE(::kill(h.front, SIGCONT) == 0);
		h.opener.join();
		INFO("rpmemd's log:\n" << fx.node.log_text());
		INFO("the open: " << h.open_error);
		CHECK(h.open_error.empty());
		CHECK(h.persisted);
		CHECK(has(fx.node.log_text(),
		          fmt::format("the session's process {} was killed by signal 9", h.spare)));
		CHECK(has(fx.node.log_text(),
		          "this rpmemd serves its session itself: the spare given it was killed by "
		          "signal 9 (Killed) before it accepted it"));
	}
	next_session_handed_over(fx, ready_before, 0x79);
}

TEST_CASE("resident: a killed session ends as when rpmemd served it itself, and the pool opens "
          "again",
          "[resident]")
{
	remote_setup fx(8 << 20, {"8M"}, resident_options());
	const std::string dir = fx.node.dir().string();
	first_session(fx, 0x11);
	unsigned nlanes = 2;
	auto pool = fx.open(nlanes);
	const auto sessions = named(dir, "rpmemd-session");
	REQUIRE(sessions.size() == 1);
	REQUIRE(::kill(sessions[0].pid, SIGKILL) == 0);
	std::memset(fx.local.data() + hdr, 0x33, 4096);
	// The connection is lost: the call fails within the client's bound (RPMEM_TIMEOUT, 5 s
	// in the fixture), as it did when the process sshd started was the session's: the
	// application is told, not held.
	const auto before = std::chrono::steady_clock::now();
	CHECK_THROWS(pool->persist(hdr, 4096, 0, 0));
	const auto waited = std::chrono::steady_clock::now() - before;
	INFO("the failing persist waited "
	     << std::chrono::duration_cast<std::chrono::milliseconds>(waited).count() << " ms");
	CHECK(waited < fx.node.options().tuning->op_timeout);
	pool.reset();
	// The front stood in for the session towards sshd and ended as it ended.
	CHECK(wait_for([&] { return rpmemd_processes(dir).size() == 1 + 2; }, 10s));
	INFO("rpmemd's log:\n" << fx.node.log_text());
	CHECK(fx.node.log_text().find(fmt::format("the session's process {} was killed by signal 9",
	                                          sessions[0].pid)) != std::string::npos);
	nlanes = 2;
	auto again = fx.open(nlanes);
	CHECK(slurp(fx.node.part("pool.set")).substr(hdr, 4096) == std::string(4096, '\x11'));
	again->close();
}

TEST_CASE("resident: killed, it ends no session, and the next session serves itself and starts "
          "another",
          "[resident]")
{
	remote_setup fx(8 << 20, {"8M"}, resident_options());
	const std::string dir = fx.node.dir().string();
	first_session(fx, 0x11);
	unsigned nlanes = 2;
	auto pool = fx.open(nlanes);
	const auto residents = named(dir, "rpmemd-resident");
	REQUIRE(residents.size() == 1);
	REQUIRE(::kill(residents[0].pid, SIGKILL) == 0);
	REQUIRE(wait_for([&] { return named(dir, "rpmemd-resident").empty(); }, 10s));
	// Its spares follow it: they wait on it and see it go.
	CHECK(wait_for([&] { return named(dir, "rpmemd-spare").empty(); }, 10s));
	persist_page(fx, *pool, 0x44);
	pool->close();
	CHECK(wait_for([&] { return rpmemd_processes(dir).empty(); }, 10s));

	// The socket the killed resident left is refused by nobody: the next front finds no
	// listener, serves its session itself and starts a resident again.
	nlanes = 2;
	auto next = fx.open(nlanes);
	next->close();
	INFO("rpmemd's log:\n" << fx.node.log_text());
	CHECK(count(fx.node.log_text(), "this rpmemd serves its session itself: no resident") == 2);
	CHECK(wait_for([&] { return named(dir, "rpmemd-resident").size() == 1; }, 10s));
}

TEST_CASE("resident: it ends once idle, and when its socket is removed", "[resident]")
{
	SECTION("idle: --resident=1")
	{
		remote_setup fx(8 << 20, {"8M"}, resident_options("1"));
		const std::string dir = fx.node.dir().string();
		// Idle from its start: it may end before its spares are warm (a slow machine, a
		// sanitizer's build), which is no reason to wait for them.
		first_session(fx, 0x11, false);
		CHECK(wait_for([&] { return rpmemd_processes(dir).empty(); }, 20s));
		INFO("rpmemd's log:\n" << fx.node.log_text());
		CHECK(fx.node.log_text().find("resident rpmemd ends: no session for 1 s") !=
		      std::string::npos);
		// Its socket went with it.
		for (const auto &e : fs::directory_iterator(fx.node.dir() / "sessions"))
			CHECK(e.path().extension() != ".sock");
	}
	SECTION("its socket removed")
	{
		remote_setup fx(8 << 20, {"8M"}, resident_options("600"));
		const std::string dir = fx.node.dir().string();
		first_session(fx, 0x11);
		for (const auto &e : fs::directory_iterator(fx.node.dir() / "sessions"))
			if (e.path().extension() == ".sock")
				fs::remove(e.path());
		CHECK(wait_for([&] { return rpmemd_processes(dir).empty(); }, 10s));
		INFO("rpmemd's log:\n" << fx.node.log_text());
		CHECK(fx.node.log_text().find("was removed") != std::string::npos);
	}
}

TEST_CASE("resident: a replica directory removed takes its resident with it", "[resident]")
{
	std::string dir;
	{
		remote_setup fx(8 << 20, {"8M"}, resident_options("600"));
		dir = fx.node.dir().string();
		first_session(fx, 0x11);
		REQUIRE(named(dir, "rpmemd-resident").size() == 1);
	} // the fixture removes the directory, poolset and status directory with it
	CHECK(wait_for([&] { return rpmemd_processes(dir).empty(); }, 10s));
}

TEST_CASE("resident: what no front of its own sends is refused, saying why, and it goes on "
          "handing sessions over",
          "[resident]")
{
	namespace r = rpmemd::resident;
	remote_setup fx(8 << 20, {"8M"}, resident_options("600"));
	const std::string dir = fx.node.dir().string();
	first_session(fx, 0x11);
	const auto residents = named(dir, "rpmemd-resident");
	REQUIRE(residents.size() == 1);
	const std::string path = resident_socket(fx);
	REQUIRE(!path.empty());

	// Bytes that are no request.
	{
		const int s = connect_to(path);
		REQUIRE(s >= 0);
		const std::uint8_t junk[] = {1, 2, 3, 4, 5};
		REQUIRE(r::send_packet(s, junk) == 0);
		CHECK(answer(s) == "refused: a malformed request");
		::close(s);
	}
	// A well-formed request of another configuration (an rpmemd that is not this one).
	{
		const int s = connect_to(path);
		REQUIRE(s >= 0);
		r::request q;
		q.front_pid = static_cast<std::uint32_t>(::getpid());
		q.cwd = "/";
		q.identity = "an rpmemd of another configuration";
		q.environment = {"PATH=/usr/bin"};
		REQUIRE(r::send_packet(s, r::encode_request(q)) == 0);
		CHECK(answer(s) == "refused: its identity differs from the resident's");
		::close(s);
	}
	// More fronts waiting than it holds: 64 connect and say nothing; the next is refused at
	// once, and the silent ones are dropped after the request timeout (5 s).
	{
		std::vector<int> silent;
		for (int i = 0; i < 64; ++i) {
			const int s = connect_to(path);
			REQUIRE(s >= 0);
			silent.push_back(s);
		}
		const int s = connect_to(path);
		REQUIRE(s >= 0);
		CHECK(answer(s) == "refused: the resident is busy");
		::close(s);
		CHECK(wait_for(
		    [&] {
			    return count(fx.node.log_text(),
			                 "connected and sent no request within") == 64;
		    },
		    30s));
		for (int f : silent)
			::close(f);
	}
	// A process of another user (SO_PEERCRED: its effective uid; its file system uid stays
	// root's so the 0700 directory lets it reach the socket): the connection is closed
	// unanswered.
	{
		const pid_t child = ::fork();
		REQUIRE(child >= 0);
		if (child == 0) {
			if (::seteuid(65534) != 0)
				::_exit(10);
			::setfsuid(0);
			const int s = connect_to(path);
			if (s < 0)
				::_exit(11);
			char b[16];
			::_exit(::recv(s, b, sizeof b, 0) == 0 ? 0 : 12); // closed, nothing sent
		}
		int status = 0;
		REQUIRE(::waitpid(child, &status, 0) == child);
		CHECK(WIFEXITED(status));
		CHECK(WEXITSTATUS(status) == 0);
		CHECK(fx.node.log_text().find(fmt::format("refused a connection from pid {} of uid "
		                                          "65534: only this user's rpmemd",
		                                          child)) != std::string::npos);
	}

	// The same resident still hands the next session to a spare, and its data lands.
	REQUIRE(wait_for([&] { return named(dir, "rpmemd-spare").size() == 2; }, 30s));
	const auto handed = count(fx.node.log_text(), "handed to spare pid");
	unsigned nlanes = 2;
	auto pool = fx.open(nlanes);
	persist_page(fx, *pool, 0x77);
	pool->close();
	const auto log = fx.node.log_text();
	INFO("rpmemd's log:\n" << log);
	CHECK(count(log, "handed to spare pid") == handed + 1);
	CHECK(named(dir, "rpmemd-resident").size() == 1);
	CHECK(named(dir, "rpmemd-resident")[0].pid == residents[0].pid);
}
