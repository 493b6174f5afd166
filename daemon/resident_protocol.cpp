// SPDX-License-Identifier: BSD-3-Clause
#include "resident_protocol.hpp"

#include "wire/wire.hpp"

#include <cerrno>
#include <cstring>
#include <poll.h>
#include <sys/socket.h>

namespace rpmemd::resident
{

namespace
{

constexpr std::size_t max_fds = 3;
constexpr std::size_t max_environment = 4096;

void blob(rpmem::wire::writer &w, const std::string &s)
{
	w.u32(static_cast<std::uint32_t>(s.size()));
	w.bytes(s.data(), s.size());
}

std::optional<std::string> blob(rpmem::wire::reader &r)
{
	const std::uint32_t n = r.u32();
	if (!r.ok() || n > r.remaining())
		return std::nullopt;
	std::string s(n, '\0');
	if (!r.bytes(s.data(), n))
		return std::nullopt;
	return s;
}

std::vector<std::uint8_t> header(kind what)
{
	std::vector<std::uint8_t> out;
	rpmem::wire::writer w(out);
	w.u32(protocol_version);
	w.u32(static_cast<std::uint32_t>(what));
	return out;
}

bool decode_request(rpmem::wire::reader &r, request &req)
{
	req.front_pid = r.u32();
	req.umask = r.u32();
	auto cwd = blob(r);
	auto identity = blob(r);
	const std::uint32_t n = r.u32();
	if (!cwd || !identity || !r.ok() || n > max_environment)
		return false;
	req.cwd = std::move(*cwd);
	req.identity = std::move(*identity);
	for (std::uint32_t i = 0; i < n; ++i) {
		auto var = blob(r);
		if (!var || var->find('=') == std::string::npos ||
		    var->find('\0') != std::string::npos)
			return false;
		req.environment.push_back(std::move(*var));
	}
	return req.umask <= 0777 && req.cwd.find('\0') == std::string::npos;
}

} // namespace

std::vector<std::uint8_t> encode_request(const request &r, kind what)
{
	auto out = header(what);
	rpmem::wire::writer w(out);
	w.u32(r.front_pid);
	w.u32(r.umask);
	blob(w, r.cwd);
	blob(w, r.identity);
	w.u32(static_cast<std::uint32_t>(r.environment.size()));
	for (const auto &v : r.environment)
		blob(w, v);
	return out;
}

std::vector<std::uint8_t> encode_simple(kind what, std::uint32_t value, bool core)
{
	auto out = header(what);
	rpmem::wire::writer w(out);
	switch (what) {
	case kind::accept:
	case kind::exited:
		w.u32(value);
		break;
	case kind::killed:
		w.u32(value);
		w.u8(core ? 1 : 0);
		break;
	default:
		break;
	}
	return out;
}

std::vector<std::uint8_t> encode_refuse(const std::string &reason)
{
	auto out = header(kind::refuse);
	rpmem::wire::writer w(out);
	blob(w, reason);
	return out;
}

std::optional<message> decode(std::span<const std::uint8_t> bytes)
{
	rpmem::wire::reader r(bytes);
	if (r.u32() != protocol_version)
		return std::nullopt;
	message m;
	m.what = static_cast<kind>(r.u32());
	switch (m.what) {
	case kind::request:
	case kind::job:
		if (!decode_request(r, m.req))
			return std::nullopt;
		break;
	case kind::accept:
	case kind::exited:
		m.value = r.u32();
		break;
	case kind::killed: {
		m.value = r.u32();
		const std::uint8_t core = r.u8();
		if (core > 1)
			return std::nullopt;
		m.core = core == 1;
		break;
	}
	case kind::refuse: {
		auto why = blob(r);
		if (!why)
			return std::nullopt;
		m.reason = std::move(*why);
		break;
	}
	case kind::warm:
	case kind::channel:
		break;
	default:
		return std::nullopt;
	}
	if (!r.done())
		return std::nullopt;
	return m;
}

int send_packet(int sock, std::span<const std::uint8_t> bytes, std::span<const int> fds)
{
	if (fds.size() > max_fds)
		return EINVAL;
	iovec iov{const_cast<std::uint8_t *>(bytes.data()), bytes.size()};
	msghdr mh{};
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * max_fds)] = {};
	if (!fds.empty()) {
		mh.msg_control = control;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
		cmsghdr *c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
		std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
	}
	for (;;) {
		const ssize_t n = ::sendmsg(sock, &mh, MSG_NOSIGNAL);
		if (n >= 0)
			return static_cast<std::size_t>(n) == bytes.size() ? 0 : EMSGSIZE;
		if (errno != EINTR)
			return errno;
	}
}

std::optional<packet> receive_packet(int sock, int timeout_ms, int *err)
{
	pollfd p{sock, POLLIN, 0};
	for (;;) {
		const int r = ::poll(&p, 1, timeout_ms);
		if (r > 0)
			break;
		if (r == 0) {
			*err = ETIMEDOUT;
			return std::nullopt;
		}
		if (errno != EINTR) {
			*err = errno;
			return std::nullopt;
		}
	}
	packet out;
	out.bytes.resize(max_message);
	iovec iov{out.bytes.data(), out.bytes.size()};
	msghdr mh{};
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * max_fds)] = {};
	mh.msg_control = control;
	mh.msg_controllen = sizeof control;
	ssize_t n;
	do
		n = ::recvmsg(sock, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		*err = errno == EAGAIN ? ETIMEDOUT : errno;
		return std::nullopt;
	}
	for (cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		const std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (std::size_t i = 0; i < count; ++i) {
			int fd;
			std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
			out.fds.emplace_back(fd);
		}
	}
	if (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
		*err = EMSGSIZE;
		return std::nullopt;
	}
	if (n == 0 && out.fds.empty()) {
		*err = 0; // a SEQPACKET socket reads 0 bytes only at its end: no message is empty
		return std::nullopt;
	}
	out.bytes.resize(static_cast<std::size_t>(n));
	return out;
}

} // namespace rpmemd::resident
