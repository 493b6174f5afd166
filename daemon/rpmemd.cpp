// SPDX-License-Identifier: BSD-3-Clause
// rpmemd: the replica-side daemon. One process per SSH session and at most one pool per
// process; the SSH login authenticated the user, Unix permissions authorize. stdout carries
// the control protocol and nothing else.
#include "config.hpp"
#include "log.hpp"
#include "pool_header.hpp"
#include "pool_store.hpp"
#include "session.hpp"

#include "control/codec.hpp"
#include "control/fd_stream.hpp"
#include "rpmem/error.hpp"

#include <csignal>
#include <cstdlib>
#include <iostream>
#include <sstream>
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
