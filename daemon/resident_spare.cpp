// SPDX-License-Identifier: BSD-3-Clause
#include "resident_spare.hpp"

#include "log.hpp"
#include "resident_protocol.hpp"

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace rpmemd::resident
{

namespace
{

using rpmem::posix::unique_fd;

/** How long a spare that accepted a session waits for the front's channel. */
constexpr int channel_timeout_ms = 5000;

// ---- the session's process ------------------------------------------------------------------

/** Takes on what the front had: the channel as stdin, stdout and stderr, the environment, the
 *  working directory, the umask. */
void take_on(const request &req, std::vector<unique_fd> &channel)
{
	for (int i = 0; i < 3; ++i)
		::dup2(channel[static_cast<std::size_t>(i)].get(), i);
	channel.clear();
	::clearenv();
	for (const auto &var : req.environment)
		::putenv(::strdup(var.c_str())); // the environment keeps its strings
	if (req.cwd.empty() || ::chdir(req.cwd.c_str()) != 0)
		(void)::chdir("/");
	::umask(static_cast<mode_t>(req.umask));
}

/** The session's process ends as its front did: a front that is gone (killed, or its SSH
 *  session's processes killed) takes its session with it, as when both were one process. */
void watch_front(int conn, std::uint32_t front_pid, std::atomic<bool> &ending)
{
	std::thread([conn, front_pid, &ending] {
		pollfd p{conn, POLLIN | POLLRDHUP, 0};
		while (::poll(&p, 1, -1) < 0 && errno == EINTR) {
		}
		if (ending.load())
			return;
		log_err("the rpmemd sshd started for this session (pid {}) is gone: the session "
		        "ends with it",
		        front_pid);
		::kill(::getpid(), SIGKILL);
	}).detach();
}

[[noreturn]] void serve_session(packet job, const message &m, const hooks &h, char **argv,
                                pid_t resident_pid)
{
	const int conn = job.fds.at(0).get();
	if (send_packet(conn, encode_simple(kind::accept, static_cast<std::uint32_t>(::getpid()))))
		std::exit(0); // the front is gone: it serves nothing, nor do we
	int err = 0;
	auto channel = receive_packet(conn, channel_timeout_ms, &err);
	auto what = channel ? decode(channel->bytes) : std::nullopt;
	if (!what || what->what != kind::channel || channel->fds.size() != 3) {
		// The front gave up waiting and serves the session itself, or it is gone.
		std::string why = "it sent something else";
		if (!channel && (err == 0 || err == ECONNRESET))
			why = "it hung up";
		else if (!channel && err == ETIMEDOUT)
			why = fmt::format("nothing within {} ms", channel_timeout_ms);
		else if (!channel)
			why = std::strerror(err);
		log_info("the rpmemd sshd started for a session (pid {}) did not hand its channel "
		         "over ({}): the spare that accepted it ends without a session",
		         m.req.front_pid, why);
		std::exit(0);
	}
	take_on(m.req, channel->fds);
	rename_process(argv, session_name);
	::prctl(PR_SET_NAME, "rpmemd", 0, 0, 0);
	static std::atomic<bool> ending{false};
	watch_front(conn, m.req.front_pid, ending);
	log_info("session of front pid {} taken by a spare of the resident (pid {})",
	         m.req.front_pid, resident_pid);
	const int code = h.serve();
	ending.store(true);
	// The resident tells the front once this process is gone; with no resident left, this
	// process tells it now.
	if (::getppid() != resident_pid)
		(void)send_packet(conn,
		                  encode_simple(kind::exited, static_cast<std::uint32_t>(code)));
	std::exit(code);
}

} // namespace

void rename_process(char **argv, std::string_view name)
{
	const std::string comm(name.substr(0, 15));
	::prctl(PR_SET_NAME, comm.c_str(), 0, 0, 0);
	if (!argv || !argv[0])
		return;
	// The room argv[0] had at exec: a shorter name written before leaves it zero-filled.
	static const std::size_t room = std::strlen(argv[0]);
	const std::size_t n = std::min(room, name.size());
	std::memcpy(argv[0], name.data(), n);
	std::memset(argv[0] + n, 0, room - n);
}

[[noreturn]] void spare_main(unique_fd ctl, const hooks &h, char **argv, pid_t resident_pid,
                             const sigset_t &startup_mask)
{
	::sigprocmask(SIG_SETMASK, &startup_mask, nullptr);
	rename_process(argv, spare_name);
	// The resident hands a session only to a spare that said it is warm.
	h.warm();
	if (send_packet(ctl.get(), encode_simple(kind::warm)))
		std::exit(0);
	int err = 0;
	auto job = receive_packet(ctl.get(), -1, &err);
	if (!job)
		std::exit(0); // the resident ended
	auto m = decode(job->bytes);
	if (!m || m->what != kind::job || job->fds.size() != 1) {
		log_err("a spare of the resident got a malformed job: it ends");
		std::exit(1);
	}
	ctl = unique_fd();
	serve_session(std::move(*job), *m, h, argv, resident_pid);
}

} // namespace rpmemd::resident
