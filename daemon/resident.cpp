// SPDX-License-Identifier: BSD-3-Clause
#include "resident.hpp"

#include "log.hpp"
#include "resident_protocol.hpp"
#include "resident_spare.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <list>
#include <poll.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

extern char **environ;

namespace rpmemd::resident
{

namespace
{

using rpmem::posix::unique_fd;
using steady = std::chrono::steady_clock;
using namespace std::chrono_literals;

/** How long a front may take to send its request once connected. */
constexpr auto request_timeout = 5s;
/** Fronts connected and not yet answered, at most. */
constexpr std::size_t max_pending = 64;
/** The longest pause between spares that keep dying while they start. */
constexpr auto max_spare_backoff = 60s;

/** The signals the resident takes through its signalfd. */
sigset_t resident_signals()
{
	sigset_t s;
	sigemptyset(&s);
	for (int sig : {SIGCHLD, SIGTERM, SIGINT, SIGHUP})
		sigaddset(&s, sig);
	return s;
}

struct spare {
	pid_t pid = -1;
	unique_fd ctl;     ///< the resident's end of its socketpair
	bool warm = false; ///< libfabric loaded: the next session takes it first
	unique_fd front;   ///< that session's front: told how the process ended
	/** It took a session (its front waits to hear how it ended). */
	bool busy() const { return front.get() >= 0; }
	steady::time_point started = steady::now();
};

struct pending_front {
	unique_fd conn;
	pid_t pid = -1; ///< as SO_PEERCRED said
	steady::time_point since = steady::now();
};

/** What a forked child must not keep of the resident: every descriptor but its own. */
struct inherited {
	std::vector<int> fds;
	void close_all_but(int keep) const
	{
		for (int fd : fds)
			if (fd != keep && fd >= 0)
				::close(fd);
	}
};

/** How a session's process ended, for its front. */
std::vector<std::uint8_t> ending_message(int status)
{
	if (WIFSIGNALED(status))
		return encode_simple(kind::killed, static_cast<std::uint32_t>(WTERMSIG(status)),
		                     WCOREDUMP(status));
	return encode_simple(kind::exited, static_cast<std::uint32_t>(WEXITSTATUS(status)));
}

std::string ending_text(int status)
{
	if (WIFSIGNALED(status))
		return fmt::format("killed by signal {} ({})", WTERMSIG(status),
		                   ::strsignal(WTERMSIG(status)));
	return fmt::format("exit status {}", WEXITSTATUS(status));
}

// ---- the resident ----------------------------------------------------------------------------

class resident_process
{
public:
	resident_process(const identity &id, const place &where, const settings &s, const hooks &h,
	                 char **argv)
	    : id_(id), where_(where), settings_(s), hooks_(h), argv_(argv)
	{
	}

	int run()
	{
		if (!listen())
			return 0;
		log_notice("resident rpmemd started (pid {}): sessions of this configuration start "
		           "through {}; it ends {} s after the last one",
		           ::getpid(), where_.socket, settings_.idle.count());
		spare_due_ = steady::now();
		idle_since_ = steady::now();
		std::string why = loop();
		shutdown(why);
		return 0;
	}

private:
	/** The lock (one resident per identity), the socket, the signals, the watches. */
	bool listen()
	{
		lock_ = unique_fd(
		    ::open(where_.lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
		if (lock_.get() < 0) {
			log_warn("resident: cannot open {}: {}", where_.lock, std::strerror(errno));
			return false;
		}
		if (::flock(lock_.get(), LOCK_EX | LOCK_NB) != 0) {
			log_debug("resident: another one holds {}: this one ends", where_.lock);
			return false;
		}
		::unlink(where_.socket.c_str()); // a killed resident's
		sock_ = unique_fd(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
		sockaddr_un addr{};
		addr.sun_family = AF_UNIX;
		std::strncpy(addr.sun_path, where_.socket.c_str(), sizeof addr.sun_path - 1);
		const mode_t old = ::umask(077);
		const bool bound =
		    sock_.get() >= 0 &&
		    ::bind(sock_.get(), reinterpret_cast<sockaddr *>(&addr), sizeof addr) == 0;
		::umask(old);
		struct stat st {
		};
		if (!bound || ::listen(sock_.get(), 64) != 0 ||
		    ::stat(where_.socket.c_str(), &st)) {
			log_warn("resident: cannot listen on {}: {}", where_.socket,
			         std::strerror(errno));
			return false;
		}
		socket_ino_ = st.st_ino;
		sigset_t sigs = resident_signals();
		::sigprocmask(SIG_BLOCK, &sigs, &startup_mask_);
		signals_ = unique_fd(::signalfd(-1, &sigs, SFD_CLOEXEC));
		watches_ = unique_fd(::inotify_init1(IN_CLOEXEC));
		if (watches_.get() >= 0) {
			dir_watch_ = ::inotify_add_watch(watches_.get(), where_.dir.c_str(),
			                                 IN_DELETE | IN_MOVED_FROM |
			                                     IN_DELETE_SELF | IN_MOVE_SELF);
			poolset_watch_ =
			    ::inotify_add_watch(watches_.get(), settings_.poolset_dir.c_str(),
			                        IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT);
		}
		return signals_.get() >= 0;
	}

	/** Serves until the resident must end; why it ends. */
	std::string loop()
	{
		for (;;) {
			std::vector<pollfd> fds{{sock_.get(), POLLIN, 0},
			                        {signals_.get(), POLLIN, 0},
			                        {watches_.get(), POLLIN, 0}};
			for (auto &s : spares_)
				if (available(s))
					fds.push_back({s.ctl.get(), POLLIN, 0});
			for (auto &f : pending_)
				fds.push_back({f.conn.get(), POLLIN, 0});
			const int r = ::poll(fds.data(), fds.size(), wait_ms());
			if (r < 0 && errno != EINTR)
				return fmt::format("poll failed: {}", std::strerror(errno));
			if (fds[1].revents && !take_signals())
				return "asked to end by a signal";
			if (fds[2].revents)
				if (auto why = watched())
					return *why;
			if (fds[0].revents)
				accept_front();
			std::size_t i = 3;
			for (auto &s : spares_)
				if (available(s) && fds[i++].revents)
					spare_said(s);
			for (auto it = pending_.begin(); it != pending_.end(); ++i) {
				auto next = std::next(it);
				if (i < fds.size() && fds[i].revents)
					front_asked(it);
				it = next;
			}
			std::erase_if(spares_, [](const spare &s) { return s.pid < 0; });
			expire_pending();
			keep_a_spare();
			if (idle())
				return fmt::format("no session for {} s", settings_.idle.count());
		}
	}

	int wait_ms() const
	{
		auto until = steady::now() + 1h;
		if (const auto at = refill_at(counts(), spare_due_, replenish_at_))
			until = std::min(until, std::max(*at, steady::now()));
		if (sessions() == 0)
			until = std::min(until, idle_since_ + settings_.idle);
		for (const auto &f : pending_)
			until = std::min(until, f.since + request_timeout);
		const auto ms = std::chrono::ceil<std::chrono::milliseconds>(until - steady::now());
		return static_cast<int>(std::clamp<long long>(ms.count(), 0, 3'600'000));
	}

	std::size_t sessions() const
	{
		return static_cast<std::size_t>(std::count_if(spares_.begin(), spares_.end(),
		                                              [](auto &s) { return s.busy(); }));
	}
	/** A spare that can take a session: not taken, alive, still talking to us. */
	static bool available(const spare &s) { return !s.busy() && s.pid > 0 && s.ctl.get() >= 0; }
	std::size_t ready_spares() const
	{
		return static_cast<std::size_t>(
		    std::count_if(spares_.begin(), spares_.end(), available));
	}
	spare_counts counts() const
	{
		return {settings_.spares, ready_spares(),
		        static_cast<std::size_t>(
		            std::count_if(spares_.begin(), spares_.end(),
		                          [](auto &s) { return available(s) && s.warm; }))};
	}
	bool idle() const
	{
		return sessions() == 0 && pending_.empty() &&
		       steady::now() >= idle_since_ + settings_.idle;
	}

	/** false: a signal asks the resident to end. */
	bool take_signals()
	{
		signalfd_siginfo si{};
		bool go_on = true;
		while (::read(signals_.get(), &si, sizeof si) == sizeof si) {
			if (si.ssi_signo == SIGCHLD)
				reap();
			else
				go_on = false;
			pollfd p{signals_.get(), POLLIN, 0};
			if (::poll(&p, 1, 0) <= 0)
				break;
		}
		return go_on;
	}

	/** Why the resident must end: its socket or the poolset directory went away. */
	std::optional<std::string> watched()
	{
		alignas(inotify_event) char buf[4096];
		const ssize_t n = ::read(watches_.get(), buf, sizeof buf);
		const std::string name = where_.socket.substr(where_.dir.size() + 1);
		for (ssize_t off = 0; off < n;) {
			const auto *e = reinterpret_cast<const inotify_event *>(buf + off);
			off += static_cast<ssize_t>(sizeof(inotify_event) + e->len);
			if (e->wd == poolset_watch_ &&
			    (e->mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT)))
				return fmt::format("the poolset directory {} is gone",
				                   settings_.poolset_dir);
			if (e->wd == dir_watch_ && (e->mask & (IN_DELETE_SELF | IN_MOVE_SELF)))
				return fmt::format("{} is gone", where_.dir);
			if (e->wd == dir_watch_ && e->len && name == e->name)
				return fmt::format("its socket {} was removed", where_.socket);
		}
		return std::nullopt;
	}

	void accept_front()
	{
		unique_fd conn(::accept4(sock_.get(), nullptr, nullptr, SOCK_CLOEXEC));
		if (conn.get() < 0)
			return;
		ucred cred{};
		socklen_t len = sizeof cred;
		if (::getsockopt(conn.get(), SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 ||
		    cred.uid != ::getuid()) {
			log_warn("resident: refused a connection from pid {} of uid {}: only this "
			         "user's rpmemd may hand it a session",
			         cred.pid, cred.uid);
			return;
		}
		if (pending_.size() >= max_pending) {
			log_warn("resident: {} sessions wait to be handed over already: pid {} "
			         "serves its own",
			         pending_.size(), cred.pid);
			(void)send_packet(conn.get(), encode_refuse("the resident is busy"));
			return;
		}
		pending_.push_back({std::move(conn), cred.pid, steady::now()});
	}

	void refuse(pending_front &f, const std::string &why, bool expected = false)
	{
		if (expected)
			log_info("resident: pid {} serves its session itself: {}", f.pid, why);
		else
			log_warn("resident: pid {} serves its session itself: {}", f.pid, why);
		(void)send_packet(f.conn.get(), encode_refuse(why));
	}

	void front_asked(std::list<pending_front>::iterator it)
	{
		auto &f = *it;
		int err = 0;
		auto p = receive_packet(f.conn.get(), 0, &err);
		if (!p && err == ETIMEDOUT)
			return;
		auto m = p ? decode(p->bytes) : std::nullopt;
		if (!m || m->what != kind::request || !p->fds.empty())
			refuse(f, p ? "a malformed request"
			            : fmt::format("no request ({})",
			                          err ? std::strerror(err) : "EOF"));
		else if (m->req.identity != id_.text)
			refuse(f, "its identity differs from the resident's");
		else if (front_gone(f))
			// The resident was held (stopped, starved) past the front's wait: the front
			// serves the session itself; a spare given it would wait for nobody.
			log_info(
			    "resident: pid {} stopped waiting ({} ms) before its request was read: "
			    "not handed over",
			    f.pid, front_wait_ms);
		else
			hand_over(f, *m);
		pending_.erase(it);
	}

	/** Whether the front hung up: it gave up waiting (its request may still be queued). */
	static bool front_gone(const pending_front &f)
	{
		pollfd p{f.conn.get(), POLLRDHUP, 0};
		return ::poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
	}

	void hand_over(pending_front &f, message m)
	{
		spare *s = pick_spare();
		if (!s) {
			// A spare still loading libfabric would take the session only once warm,
			// which on a loaded machine outlasts the front's wait: the front is no
			// slower itself.
			refuse(f, "no spare is ready yet", true);
			keep_a_spare();
			return;
		}
		m.req.identity.clear(); // checked: the spare has its own
		const int fd = f.conn.get();
		if (int e = send_packet(s->ctl.get(), encode_request(m.req, kind::job), {&fd, 1})) {
			refuse(f, fmt::format("the spare (pid {}) could not take it: {}", s->pid,
			                      std::strerror(e)));
			return;
		}
		log_info("resident: session of pid {} handed to spare pid {}", f.pid, s->pid);
		s->ctl = unique_fd();
		s->front = std::move(f.conn);
		replenish_at_ = steady::now() + settings_.spare_delay;
	}

	/** A warm spare, or none. */
	spare *pick_spare()
	{
		for (auto &s : spares_)
			if (available(s) && s.warm)
				return &s;
		return nullptr;
	}

	void spare_said(spare &s)
	{
		int err = 0;
		auto p = receive_packet(s.ctl.get(), 0, &err);
		if (!p && err == ETIMEDOUT)
			return;
		auto m = p ? decode(p->bytes) : std::nullopt;
		if (m && m->what == kind::warm) {
			s.warm = true;
			failures_ = 0;
			log_info("resident: spare pid {} is ready after {} ms", s.pid,
			         std::chrono::duration_cast<std::chrono::milliseconds>(
			             steady::now() - s.started)
			             .count());
			return;
		}
		// Gone, or speaking nonsense: no longer a spare; reaped once it exits.
		s.ctl = unique_fd();
		if (s.pid > 0)
			::kill(s.pid, SIGTERM);
	}

	void reap()
	{
		int status = 0;
		pid_t pid;
		while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0) {
			auto s = std::find_if(spares_.begin(), spares_.end(),
			                      [pid](auto &x) { return x.pid == pid; });
			if (s == spares_.end())
				continue;
			if (s->front.get() >= 0) {
				(void)send_packet(s->front.get(), ending_message(status));
				if (WIFSIGNALED(status))
					log_notice("resident: the session's process {} was {}", pid,
					           ending_text(status));
				idle_since_ = steady::now();
			} else {
				// A spare that died before taking a session: start the next one
				// later each time, in case it dies the same way.
				++failures_;
				log_warn(
				    "resident: spare process {} ended before taking a session ({})",
				    pid, ending_text(status));
				spare_due_ = steady::now() + std::min<std::chrono::milliseconds>(
				                                 settings_.retry_delay *
				                                     (1 << std::min(failures_, 7)),
				                                 max_spare_backoff);
			}
			s->pid = -1;
		}
	}

	void keep_a_spare()
	{
		// A failed fork sets spare_due_ and ends the round; each fork adds an available
		// spare, not a warm one, so the count taken first holds for the round.
		for (auto n = spares_to_fork(counts(), steady::now(), spare_due_, replenish_at_);
		     n > 0; --n)
			if (!fork_spare())
				break;
	}

	spare *fork_spare()
	{
		int sv[2];
		if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
			log_warn("resident: no socket pair for a spare: {}", std::strerror(errno));
			spare_due_ = steady::now() + settings_.retry_delay;
			return nullptr;
		}
		unique_fd mine(sv[0]), theirs(sv[1]);
		const pid_t resident_pid = ::getpid();
		const pid_t pid = ::fork();
		if (pid < 0) {
			log_warn("resident: cannot fork a spare: {}", std::strerror(errno));
			spare_due_ = steady::now() + settings_.retry_delay;
			return nullptr;
		}
		if (pid == 0) {
			descriptors().close_all_but(-1);
			::close(mine.release());
			spare_main(std::move(theirs), hooks_, argv_, resident_pid, startup_mask_);
		}
		spares_.push_back({pid, std::move(mine), false, unique_fd(), steady::now()});
		return &spares_.back();
	}

	inherited descriptors() const
	{
		inherited in{{lock_.get(), sock_.get(), signals_.get(), watches_.get()}};
		for (const auto &s : spares_) {
			in.fds.push_back(s.ctl.get());
			in.fds.push_back(s.front.get());
		}
		for (const auto &f : pending_)
			in.fds.push_back(f.conn.get());
		return in;
	}

	void expire_pending()
	{
		const auto now = steady::now();
		for (auto it = pending_.begin(); it != pending_.end();) {
			if (now - it->since < request_timeout) {
				++it;
				continue;
			}
			log_warn("resident: pid {} connected and sent no request within {} s",
			         it->pid, std::chrono::seconds(request_timeout).count());
			it = pending_.erase(it);
		}
	}

	void shutdown(const std::string &why)
	{
		// The socket first: fronts from now on serve their sessions themselves.
		struct stat st {
		};
		if (::stat(where_.socket.c_str(), &st) == 0 && st.st_ino == socket_ino_)
			::unlink(where_.socket.c_str());
		sock_ = unique_fd();
		for (auto &s : spares_)
			if (!s.busy() && s.pid > 0)
				::kill(s.pid, SIGTERM); // spares; sessions go on without us
		log_notice("resident rpmemd ends: {}; {} session(s) still running go on", why,
		           sessions());
	}

	const identity &id_;
	const place &where_;
	const settings &settings_;
	const hooks &hooks_;
	char **argv_;
	unique_fd lock_, sock_, signals_, watches_;
	ino_t socket_ino_ = 0;
	int dir_watch_ = -1, poolset_watch_ = -1;
	sigset_t startup_mask_{};
	std::list<spare> spares_;
	std::list<pending_front> pending_;
	steady::time_point spare_due_, replenish_at_, idle_since_;
	int failures_ = 0;
};

} // namespace

int run(const identity &id, const place &where, const settings &s, const hooks &h, char **argv)
{
	resident_process r(id, where, s, h, argv);
	return r.run();
}

} // namespace rpmemd::resident
