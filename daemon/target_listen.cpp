// SPDX-License-Identifier: BSD-3-Clause
// The fabric target's listener (target_listen.hpp).
#include "target_listen.hpp"

#include "rpmem/error.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <netdb.h>
#include <sstream>
#include <sys/socket.h>
#include <unistd.h>
#include <vector>

namespace rpmemd::fabric_detail
{

namespace fab = rpmem::fabric;

namespace
{

std::vector<std::string> split_list(const std::string &s)
{
	std::vector<std::string> out;
	std::stringstream in(s);
	std::string item;
	while (std::getline(in, item, ','))
		if (!item.empty())
			out.push_back(item);
	return out;
}

bool port_held(const std::string &address, std::uint16_t port)
{
	addrinfo hints{};
	hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE;
	hints.ai_socktype = SOCK_STREAM;
	addrinfo *res = nullptr;
	if (getaddrinfo(address.c_str(), std::to_string(port).c_str(), &hints, &res) != 0)
		return false;
	bool held = false;
	if (int fd = ::socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0); fd >= 0) {
		int one = 1;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
		held = ::bind(fd, res->ai_addr, res->ai_addrlen) != 0 && errno == EADDRINUSE;
		::close(fd);
	}
	freeaddrinfo(res);
	return held;
}

} // namespace

fab::info listen_info(const std::string &address, const std::string &providers,
                      rpmem::fabric::mr_mode mr)
{
	std::string tried;
	for (const auto &p : split_list(providers)) {
		try {
			fab::request req;
			req.provider = p;
			req.mr = mr;
			return fab::info::for_listen(address, req);
		} catch (const rpmem::error &e) {
			tried += fmt::format("{}{}: {}", tried.empty() ? "" : "; ", p, e.message());
		}
	}
	throw rpmem::error(ENOMEDIUM, fmt::format("no libfabric provider of the client's list "
	                                          "({}) can listen on {}: {}",
	                                          providers, address, tried));
}

/** Whether a listener (or anything bound without SO_REUSEADDR) holds address:port: the bind a
 *  listener would make fails with EADDRINUSE. Only to say why a provider refused the port
 *  (sockets says EINVAL). */
std::unique_ptr<fab::passive_endpoint>
listen_in_range(const fab::fabric_domain &domain, const fab::eq &events, const std::string &address,
                const fab::request &req, port_range range, fab::info &info)
{
	std::string first_why;
	unsigned held = 0, tried = 0;
	for (unsigned port = range.first; port <= range.last; ++port) {
		++tried;
		try {
			info = fab::info::query(address, std::to_string(port), FI_SOURCE, req);
			auto pep = std::make_unique<fab::passive_endpoint>(domain, info);
			pep->bind(events);
			pep->listen();
			return pep;
		} catch (const rpmem::error &e) {
			if (port_held(address, static_cast<std::uint16_t>(port)))
				++held;
			else if (first_why.empty())
				first_why = fmt::format("port {}: {}", port, e.message());
		}
	}
	throw rpmem::error(
	    EADDRINUSE,
	    fmt::format("no port of port-range {}-{} on {} is free for the fabric listener "
	                "(provider {}): {} of the {} in use{}{}; widen port-range in rpmemd's "
	                "config (rpmemd(1)), or let the sessions holding them connect first (a "
	                "session keeps its port only until its client's connections are up)",
	                range.first, range.last, address, req.provider, held, tried,
	                first_why.empty() ? "" : ", ", first_why));
}

} // namespace rpmemd::fabric_detail
