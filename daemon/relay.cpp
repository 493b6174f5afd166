// SPDX-License-Identifier: BSD-3-Clause
#include "relay.hpp"

#include "log.hpp"
#include "resident.hpp"
#include "resident_protocol.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

namespace rpmemd::resident
{

namespace
{

using rpmem::posix::unique_fd;

sigset_t forwarded_signals()
{
	sigset_t s;
	sigemptyset(&s);
	for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2})
		sigaddset(&s, sig);
	return s;
}

request this_front(const identity &id)
{
	request r;
	r.front_pid = static_cast<std::uint32_t>(::getpid());
	const mode_t mask = ::umask(0);
	::umask(mask);
	r.umask = mask;
	if (char *cwd = ::getcwd(nullptr, 0)) {
		r.cwd = cwd;
		std::free(cwd);
	}
	r.identity = id.text;
	for (char **e = environ; e && *e; ++e)
		r.environment.emplace_back(*e);
	return r;
}

/** Ends this process as the session's process ended: killed by `sig` (without a core of
 *  its own: the session's process dumped one if there was one to dump). */
[[noreturn]] void die_by(int sig)
{
	rlimit none{0, 0};
	::setrlimit(RLIMIT_CORE, &none);
	std::signal(sig, SIG_DFL);
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, sig);
	::sigprocmask(SIG_UNBLOCK, &s, nullptr);
	::raise(sig);
	std::_Exit(128 + sig); // a signal whose default is not to end the process
}

/** Stands in for the session's process `pid` until it ends: never returns. */
[[noreturn]] void stand_in(unique_fd sock, pid_t pid, const sigset_t &forwarded)
{
	::prctl(PR_SET_NAME, "rpmemd-relay", 0, 0, 0);
	// The channel is the session's now: its end is the session's end, as before.
	const int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
	::dup2(null, STDIN_FILENO);
	::dup2(null, STDOUT_FILENO);
	::close(null);
	unique_fd signals(::signalfd(-1, &forwarded, SFD_CLOEXEC));
	for (;;) {
		pollfd fds[] = {{sock.get(), POLLIN, 0}, {signals.get(), POLLIN, 0}};
		if (::poll(fds, signals.get() >= 0 ? 2 : 1, -1) < 0)
			continue; // EINTR
		if (fds[1].revents) {
			signalfd_siginfo si{};
			if (::read(signals.get(), &si, sizeof si) == sizeof si)
				::kill(pid, static_cast<int>(si.ssi_signo));
		}
		if (!fds[0].revents)
			continue;
		int err = 0;
		auto p = receive_packet(sock.get(), 0, &err);
		// ECONNRESET: the resident closed its end with our channel unread (the session's
		// process died before taking it). The error comes once, before the messages still
		// queued: how that process ended is read next.
		if (!p && (err == ETIMEDOUT || err == ECONNRESET))
			continue;
		auto m = p ? decode(p->bytes) : std::nullopt;
		if (m && m->what == kind::exited)
			std::exit(static_cast<int>(m->value));
		if (m && m->what == kind::killed)
			die_by(static_cast<int>(m->value));
		if (m)
			continue;
		// Only when the resident died too, and the session's process did not end by itself.
		std::fprintf(stderr,
		             "rpmemd: the session's process %d ended and its resident rpmemd is "
		             "gone: its exit status is unknown\n",
		             pid);
		std::exit(1);
	}
}

} // namespace

not_relayed relay(const place &where, const identity &id)
{
	unique_fd sock(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
	sockaddr_un addr{};
	addr.sun_family = AF_UNIX;
	std::strncpy(addr.sun_path, where.socket.c_str(), sizeof addr.sun_path - 1);
	if (sock.get() < 0 ||
	    ::connect(sock.get(), reinterpret_cast<sockaddr *>(&addr), sizeof addr) != 0) {
		const int e = errno;
		return {
		    e == ENOENT || e == ECONNREFUSED,
		    fmt::format("no resident rpmemd at {}: {}", where.socket, std::strerror(e))};
	}
	ucred cred{};
	socklen_t len = sizeof cred;
	if (::getsockopt(sock.get(), SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 ||
	    cred.uid != ::getuid())
		return {false, fmt::format("{} is served by pid {} of uid {}, not by this user: "
		                           "not used",
		                           where.socket, cred.pid, cred.uid)};

	// Blocked from now on: one that arrives during the handover reaches the session after.
	const sigset_t forwarded = forwarded_signals();
	sigset_t before;
	::sigprocmask(SIG_BLOCK, &forwarded, &before);
	auto refused = [&](std::string why) {
		::sigprocmask(SIG_SETMASK, &before, nullptr);
		return not_relayed{false, std::move(why)};
	};
	if (int e = send_packet(sock.get(), encode_request(this_front(id))))
		return refused(
		    fmt::format("the resident did not take the request: {}", std::strerror(e)));
	int err = 0;
	auto p = receive_packet(sock.get(), front_wait_ms, &err);
	auto m = p ? decode(p->bytes) : std::nullopt;
	if (!m || m->what != kind::accept || m->value == 0) {
		if (m && m->what == kind::refuse)
			return refused("the resident refused: " + m->reason);
		// The resident tells how the spare given this session ended: before it accepted,
		// it never had the channel, and this process can serve the session still.
		if (m && m->what == kind::exited)
			return refused(fmt::format("the spare given it ended before it accepted it "
			                           "(exit status {})",
			                           m->value));
		if (m && m->what == kind::killed)
			return refused(
			    fmt::format("the spare given it was killed by signal {} ({}) "
			                "before it accepted it",
			                m->value, ::strsignal(static_cast<int>(m->value))));
		return refused(p ? "the resident answered nonsense"
		                 : fmt::format("no answer from the resident within {} ms ({})",
		                               front_wait_ms,
		                               err ? std::strerror(err) : "it hung up"));
	}
	const int channel[] = {STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO};
	if (int e = send_packet(sock.get(), encode_simple(kind::channel), channel))
		return refused(
		    fmt::format("the channel could not be handed over: {}", std::strerror(e)));
	stand_in(std::move(sock), static_cast<pid_t>(m->value), forwarded);
}

void spawn(char **argv)
{
	std::vector<std::string> args{std::string(resident_name)};
	for (char **a = argv + 1; *a; ++a)
		args.emplace_back(*a);
	std::vector<std::string> env;
	for (char **e = environ; e && *e; ++e)
		if (!per_session_variable(*e))
			env.emplace_back(*e);
	// Built before the fork: the child only calls async-signal-safe functions.
	std::vector<char *> av, ev;
	for (auto &a : args)
		av.push_back(a.data());
	av.push_back(nullptr);
	for (auto &e : env)
		ev.push_back(e.data());
	ev.push_back(nullptr);
	const pid_t child = ::fork();
	if (child < 0) {
		log_warn("cannot start a resident rpmemd: fork: {}", std::strerror(errno));
		return;
	}
	if (child == 0) {
		// A session of its own, and a grandchild: sshd neither waits for nor signals it.
		::setsid();
		if (::fork() != 0)
			::_exit(0);
		const int null = ::open("/dev/null", O_RDWR);
		for (int fd = 0; fd < 3; ++fd)
			::dup2(null, fd);
		::close_range(3, ~0U, 0);
		if (::chdir("/") != 0)
			::_exit(127);
		::execve("/proc/self/exe", av.data(), ev.data());
		::_exit(127);
	}
	int status = 0;
	while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
	}
}

} // namespace rpmemd::resident
