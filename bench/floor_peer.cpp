// SPDX-License-Identifier: BSD-3-Clause
// rpmem-floor: the replica-side peer of rpmem-bench's transport floor. Started over SSH like
// rpmemd; listens where SSH arrived, accepts one connection that presents the secret it
// printed, registers a buffer for the client's RMA writes and reads, and answers every message
// with a small reply — the least any GPSPM daemon must do, without persisting anything.
// See floor_protocol.hpp for the line it prints.
#include "floor_protocol.hpp"

#include "fabric/cq.hpp"
#include "fabric/endpoint.hpp"
#include "fabric/eq.hpp"
#include "fabric/fabric.hpp"
#include "fabric/info.hpp"
#include "fabric/mr.hpp"
#include "fabric/page_buffer.hpp"
#include "fabric/passive_endpoint.hpp"
#include "fabric/waiter.hpp"
#include "rpmem/error.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <rdma/fi_endpoint.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>
#include <sys/random.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace
{

namespace fab = rpmem::fabric;
namespace fp = rpmem::bench::floor_proto;
using namespace std::chrono_literals;

struct peer_options {
	std::string provider = "tcp";
	std::string address; // empty: SSH_CONNECTION's server address
	std::size_t buffer = 4 << 20;
	std::size_t msg_max = 4096 + 64;
	unsigned depth = 64;
	rpmem::fabric::wait_mode wait = rpmem::fabric::wait_mode::adaptive;
	rpmem::fabric::mr_mode mr = rpmem::fabric::mr_mode::automatic;
};

std::string ssh_server_address()
{
	const char *env = std::getenv("SSH_CONNECTION");
	if (!env)
		return {};
	std::istringstream in(env);
	std::string client_ip, client_port, server_ip;
	in >> client_ip >> client_port >> server_ip;
	return server_ip;
}

struct recv_slot {
	fi_context fctx; // first: FI_CONTEXT mode scratch space
	std::uint32_t index;
};

int serve(const peer_options &o)
{
	std::string address = o.address.empty() ? ssh_server_address() : o.address;
	if (address.empty())
		throw rpmem::error(EINVAL, "SSH_CONNECTION is not set and no --address was given: "
		                           "rpmem-floor is started over ssh by rpmem-bench");
	fab::request req;
	req.provider = o.provider;
	req.mr = o.mr;
	auto fi = fab::info::for_listen(address, req);
	fab::fabric_domain domain(fi);
	fab::eq eq(domain);
	fab::passive_endpoint pep(domain, fi);
	pep.bind(eq);
	fab::page_buffer buffer(o.buffer); // registered: whole pages
	fab::memory_region buf_mr(domain, buffer.data(), buffer.size(),
	                          FI_REMOTE_READ | FI_REMOTE_WRITE);
	fab::page_buffer msgs(std::size_t(o.depth) * o.msg_max);
	fab::memory_region msg_mr(domain, msgs.data(), msgs.size(), FI_RECV);
	fab::cq_waiter waiter(o.wait);
	fab::cq cq(domain, fab::cq_options{std::size_t(o.depth) * 2 + 16, waiter.needs()});
	pep.listen();

	fp::ready r;
	r.provider = domain.provider();
	r.address = address;
	r.port = pep.name().port;
	r.rkey = buf_mr.key();
	r.raddr = buf_mr.remote_base();
	if (getrandom(r.secret.data(), r.secret.size(), 0) != static_cast<ssize_t>(r.secret.size()))
		throw rpmem::error(errno, "getrandom failed: cannot make the connection secret");
	std::fputs(fp::format_ready(r).c_str(), stdout);
	std::fflush(stdout);

	// The SSH session is our lifeline: when the client goes, so do we.
	std::thread([] {
		char c;
		while (read(STDIN_FILENO, &c, 1) > 0) {
		}
		_exit(0);
	}).detach();

	std::unique_ptr<fab::endpoint> ep;
	std::vector<recv_slot> slots(o.depth);
	auto deadline = std::chrono::steady_clock::now() + 30s;
	while (!ep) {
		auto ev = eq.read(1000ms);
		if (!ev) {
			if (std::chrono::steady_clock::now() > deadline)
				throw rpmem::error(ETIMEDOUT,
				                   "rpmem-floor: no connection within 30 s");
			continue;
		}
		if (ev->is_error() || ev->type != FI_CONNREQ)
			continue;
		if (ev->data.size() < fp::secret_size ||
		    std::memcmp(ev->data.data(), r.secret.data(), fp::secret_size) != 0) {
			pep.reject(ev->conn_info, {});
			continue;
		}
		ep = std::make_unique<fab::endpoint>(domain, ev->conn_info);
		ep->bind(eq);
		ep->bind(cq, FI_TRANSMIT | FI_SELECTIVE_COMPLETION);
		ep->bind(cq, FI_RECV);
		ep->enable();
		for (std::uint32_t i = 0; i < o.depth; ++i) {
			slots[i].index = i;
			if (ep->recv(msgs.data() + i * o.msg_max, o.msg_max, msg_mr.desc(),
			             &slots[i]) != fab::post_status::posted)
				throw rpmem::error(EAGAIN,
				                   "rpmem-floor: cannot post receives: lower "
				                   "--depth");
		}
		ep->accept({});
	}
	// Drive the handshake to FI_CONNECTED here: providers like tcp progress connection
	// management only while the EQ is read, and the client waits for it.
	for (;;) {
		auto ev = eq.read(1000ms);
		if (std::chrono::steady_clock::now() > deadline)
			throw rpmem::error(ETIMEDOUT,
			                   "rpmem-floor: the connection was not established "
			                   "within 30 s");
		if (!ev)
			continue;
		if (ev->is_error() || ev->type == FI_SHUTDOWN)
			return 0;
		if (ev->type == FI_CONNECTED)
			break;
	}

	std::array<fab::cq_entry, 16> entries{};
	std::uint8_t reply[fp::reply_size] = {};
	for (;;) {
		fab::cq_result res = waiter.wait(cq, entries, 200ms);
		if (res.error)
			return 0; // the connection went down: the client is done
		if (res.count == 0) {
			while (auto ev = eq.read(0ms))
				if (ev->is_error() || ev->type == FI_SHUTDOWN)
					return 0;
			continue;
		}
		for (std::size_t i = 0; i < res.count; ++i) {
			if (!(entries[i].flags & FI_RECV))
				continue;
			auto *slot = static_cast<recv_slot *>(entries[i].op_context);
			while (ep->recv(msgs.data() + slot->index * o.msg_max, o.msg_max,
			                msg_mr.desc(), slot) == fab::post_status::again)
				std::this_thread::yield();
			for (;;) {
				ssize_t ret = fi_inject(ep->get(), reply, sizeof(reply), 0);
				if (ret == 0)
					break;
				if (ret != -FI_EAGAIN)
					return 0;
				(void)cq.read(std::span<fab::cq_entry>(entries.data(), 0));
			}
		}
	}
}

} // namespace

int main(int argc, char **argv)
{
	std::signal(SIGPIPE, SIG_IGN);
	peer_options o;
	CLI::App app{"rpmem-floor: transport-floor peer of rpmem-bench (started over ssh)"};
	app.add_option("--provider", o.provider, "libfabric provider");
	app.add_option("--address", o.address, "address to listen on (default: SSH_CONNECTION's)");
	app.add_option("--buffer", o.buffer, "bytes of the RMA target buffer");
	app.add_option("--msg-max", o.msg_max, "largest message received");
	app.add_option("--depth", o.depth, "receives posted");
	std::map<std::string, rpmem::fabric::wait_mode> modes{
	    {"block", rpmem::fabric::wait_mode::block},
	    {"spin", rpmem::fabric::wait_mode::spin},
	    {"adaptive", rpmem::fabric::wait_mode::adaptive}};
	app.add_option("--wait", o.wait,
	               "how to wait for completions: block, spin, or adaptive (poll while it "
	               "pays and a core is free, then block)")
	    ->transform(CLI::CheckedTransformer(modes));
	std::map<std::string, rpmem::fabric::mr_mode> mr_modes{
	    {"auto", rpmem::fabric::mr_mode::automatic},
	    {"basic", rpmem::fabric::mr_mode::basic},
	    {"scalable", rpmem::fabric::mr_mode::scalable}};
	app.add_option("--mr-mode", o.mr, "memory registration mode: auto, basic or scalable")
	    ->transform(CLI::CheckedTransformer(mr_modes));
	try {
		app.parse(argc, argv);
	} catch (const CLI::ParseError &e) {
		// --help is a "parse error" with exit code 0: only a real one is reported.
		if (e.get_exit_code() != 0)
			std::printf("RPMEM-FLOOR-ERROR bad arguments: %s\n", e.what());
		return app.exit(e);
	}
	try {
		return serve(o);
	} catch (const std::exception &e) {
		std::printf("RPMEM-FLOOR-ERROR %s\n", e.what());
		std::fflush(stdout);
		std::fprintf(stderr, "rpmem-floor: %s\n", e.what());
		return 1;
	}
}
