// SPDX-License-Identifier: BSD-3-Clause
#include "fabric/passive_endpoint.hpp"

#include "fabric/error.hpp"

#include <fmt/format.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>

namespace rpmem::fabric
{
namespace
{

socket_address to_socket_address(const sockaddr_storage &storage)
{
	char host[INET6_ADDRSTRLEN] = "";
	if (storage.ss_family == AF_INET) {
		const auto &in = reinterpret_cast<const sockaddr_in &>(storage);
		inet_ntop(AF_INET, &in.sin_addr, host, sizeof host);
		return {host, ntohs(in.sin_port)};
	}
	if (storage.ss_family == AF_INET6) {
		const auto &in6 = reinterpret_cast<const sockaddr_in6 &>(storage);
		inet_ntop(AF_INET6, &in6.sin6_addr, host, sizeof host);
		return {host, ntohs(in6.sin6_port)};
	}
	throw rpmem::error(EAFNOSUPPORT,
	                   fmt::format("fi_getname returned address family {}, not IPv4 or IPv6",
	                               storage.ss_family));
}

} // namespace

passive_endpoint::passive_endpoint(const fabric_domain &parent, const info &source)
    : provider_(parent.provider())
{
	check(fi_passive_ep(parent.fabric(), source.get(), pep_.out(), nullptr), "fi_passive_ep",
	      provider_);
}

void passive_endpoint::bind(const eq &events)
{
	check(fi_pep_bind(pep_.get(), &events.get()->fid, 0), "fi_pep_bind(EQ)", provider_);
}

void passive_endpoint::listen()
{
	check(fi_listen(pep_.get()), "fi_listen", provider_);
}

socket_address passive_endpoint::name() const
{
	sockaddr_storage storage{};
	std::size_t len = sizeof storage;
	check(fi_getname(&pep_.get()->fid, &storage, &len), "fi_getname(passive endpoint)",
	      provider_);
	return to_socket_address(storage);
}

void passive_endpoint::reject(const info &connreq, std::span<const std::uint8_t> private_data)
{
	check(fi_reject(pep_.get(), connreq->handle, private_data.data(), private_data.size()),
	      "fi_reject", provider_);
}

} // namespace rpmem::fabric
