// SPDX-License-Identifier: BSD-3-Clause
// rpmemd: the replica-side daemon. One process per SSH session and at most one pool per
// process; the SSH login authenticated the user, Unix permissions authorize. stdout carries
// the control protocol and nothing else. A session starts fast where a resident rpmemd of
// the same user and configuration runs (resident.hpp): the rpmemd sshd started hands it the
// session and stands in for the session's process.
#include "config.hpp"
#include "log.hpp"
#include "pool_header.hpp"
#include "pool_store.hpp"
#include "relay.hpp"
#include "resident.hpp"
#include "session.hpp"

#include "control/codec.hpp"
#include "control/fd_stream.hpp"
#include "fabric/library.hpp"
#include "rpmem/error.hpp"

#include <csignal>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <sstream>
#include <string_view>
#include <unistd.h>

namespace
{

namespace ctl = rpmem::control;

/** SSH_CONNECTION is "client_ip client_port server_ip server_port". */
struct ssh_origin {
	std::string peer = "local";
	std::string server_address;
};

ssh_origin read_ssh_connection()
{
	ssh_origin o;
	const char *env = std::getenv("SSH_CONNECTION");
	if (!env)
		return o;
	std::istringstream in(env);
	std::string client_ip, client_port, server_ip;
	if (in >> client_ip >> client_port >> server_ip) {
		o.peer = client_ip + ":" + client_port;
		o.server_address = server_ip;
	}
	return o;
}

void send_hello(rpmem::byte_stream &io, ctl::status st, int err, const std::string &message)
{
	ctl::hello h;
	h.st = st;
	h.err = static_cast<std::uint32_t>(err);
	h.daemon_version = RPMEMD_VERSION;
	h.message = message;
	ctl::send(io, ctl::encode(h));
}

/** Tells the client why rpmemd did not start: a failure hello (the client waits for one),
 *  unless stdout is a terminal or RPMEMD_NO_HELLO is set (rpmemd run by hand). */
void send_start_failure(const rpmem::error &e)
{
	if (isatty(STDOUT_FILENO) || std::getenv("RPMEMD_NO_HELLO"))
		return;
	ctl::fd_stream io(STDIN_FILENO, STDOUT_FILENO);
	try {
		send_hello(io, ctl::status::fatal, e.errnum(), e.message());
	} catch (const std::exception &) {
		// The client is gone: stderr and the exit status are all there is.
	}
}

int remove_pool(const rpmemd::config &cfg)
{
	try {
		rpmemd::pool_store store(cfg.poolset_dir);
		store.remove(*cfg.remove_desc, cfg.force, cfg.remove_poolset);
		rpmemd::log_notice("removed pool set {}", *cfg.remove_desc);
		return 0;
	} catch (const rpmem::error &e) {
		rpmemd::log_err("cannot remove {}: {}", *cfg.remove_desc, e.message());
		std::cerr << "rpmemd: cannot remove " << *cfg.remove_desc << ": " << e.message()
		          << "\n";
		return e.errnum() ? e.errnum() : 1;
	}
}

/** Serves one session on stdin/stdout: the hello, then the control loop. */
int serve(const rpmemd::config &cfg)
{
	auto origin = read_ssh_connection();
	ctl::fd_stream io(STDIN_FILENO, STDOUT_FILENO);
	try {
		if (origin.server_address.empty())
			throw rpmem::error(EINVAL, "SSH_CONNECTION is not set: rpmemd must be "
			                           "started over ssh by librpmem");
		rpmemd::pool_store store(cfg.poolset_dir);
		send_hello(io, ctl::status::success, 0, {});
		return rpmemd::run_session(cfg, store, io, origin.peer, origin.server_address,
		                           rpmemd::start_target);
	} catch (const rpmem::error &e) {
		rpmemd::log_err("start-up failed: {}", e.message());
		send_start_failure(e);
		return 1;
	}
}

/** This process's resident identity and where residents of it listen; nullopt (and *why)
 *  when that place cannot be trusted. */
std::optional<std::pair<rpmemd::resident::identity, rpmemd::resident::place>>
resident_of(const rpmemd::config &cfg, int argc, char **argv, std::string *why)
{
	namespace res = rpmemd::resident;
	auto id = res::identify(std::vector<std::string>(argv + std::min(argc, 1), argv + argc),
	                        res::config_files(cfg, rpmemd::environment::from_process()));
	auto where = res::locate(cfg, id, why);
	if (!where)
		return std::nullopt;
	return std::pair{std::move(id), std::move(*where)};
}

/** The rpmemd sshd started, with a resident configured: hands the session to one (never
 *  returns then), or starts one for the sessions after and returns to serve this one. */
void try_resident(const rpmemd::config &cfg, int argc, char **argv)
{
	namespace res = rpmemd::resident;
	// Run by hand (a terminal), or not over SSH: nothing to hand over.
	if (isatty(STDIN_FILENO) || isatty(STDOUT_FILENO) || !std::getenv("SSH_CONNECTION"))
		return;
	std::string why;
	const auto resident = resident_of(cfg, argc, argv, &why);
	if (!resident) {
		rpmemd::log_info("no resident rpmemd: {}", why);
		return;
	}
	const auto r = res::relay(resident->second, resident->first);
	rpmemd::log_info("this rpmemd serves its session itself: {}", r.why);
	if (r.no_resident)
		res::spawn(argv);
}

int run_resident(const rpmemd::config &cfg, int argc, char **argv)
{
	namespace res = rpmemd::resident;
	std::string why;
	const auto resident = resident_of(cfg, argc, argv, &why);
	if (!resident) {
		rpmemd::log_warn("resident rpmemd: {}", why);
		return 0;
	}
	res::settings s;
	s.idle = cfg.resident;
	s.poolset_dir = cfg.poolset_dir;
	// A spare loads libfabric and initializes its providers before it waits: what costs a
	// session the most (~0.3 s on Debian).
	res::hooks h{rpmem::fabric::library::load_now, [&cfg] { return serve(cfg); }};
	return res::run(resident->first, resident->second, s, h, argv);
}

} // namespace

int main(int argc, char **argv)
{
	std::signal(SIGPIPE, SIG_IGN);
	auto &log = rpmemd::logger::instance();
	log.init_stderr();

	rpmemd::config cfg;
	try {
		cfg = rpmemd::load(argc, argv, rpmemd::environment::from_process());
	} catch (const rpmemd::config_error &e) {
		std::cerr << "rpmemd: " << e.what() << "\n";
		send_start_failure(rpmem::error(EINVAL, e.what()));
		return 255;
	}
	if (cfg.help) {
		std::cerr << rpmemd::usage(argv[0]);
		return 0;
	}
	if (cfg.version) {
		std::cerr << rpmemd::version_string() << "\n";
		return 0;
	}
	try {
		log.init(cfg);
	} catch (const rpmem::error &e) {
		// As PMDK's rpmemd: a daemon that cannot log where it was told to does not start,
		// rather than serve pools with its log going nowhere.
		std::cerr << "rpmemd: " << e.message() << "\n";
		if (!cfg.remove_desc)
			send_start_failure(e);
		return cfg.remove_desc ? e.errnum() : 1;
	}
	rpmemd::report_bus_errors(log.file_fd());
	if (cfg.remove_desc)
		return remove_pool(cfg);
	if (std::string_view(argv[0]) == rpmemd::resident::resident_name)
		return run_resident(cfg, argc, argv);
	if (cfg.resident.count() > 0)
		try_resident(cfg, argc, argv);
	return serve(cfg);
}
