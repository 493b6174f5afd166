// SPDX-License-Identifier: BSD-3-Clause
#include "fabric/endpoint.hpp"

#include "fabric/error.hpp"

#include <fmt/format.h>

#include <sys/uio.h>

#include <cerrno>

namespace rpmem::fabric
{
namespace
{

/** One local buffer and one remote range, as fi_msg_rma wants them (it points into itself). */
struct rma_message {
	iovec iov;
	void *desc;
	fi_rma_iov remote;
	fi_msg_rma msg{};

	rma_message(void *buf, std::size_t len, void *local_desc, rma_target target, void *context)
	    : iov{buf, len}, desc(local_desc), remote{target.addr, len, target.key}
	{
		msg.msg_iov = &iov;
		msg.desc = &desc;
		msg.iov_count = 1;
		msg.rma_iov = &remote;
		msg.rma_iov_count = 1;
		msg.context = context;
	}
	rma_message(const rma_message &) = delete;
	rma_message &operator=(const rma_message &) = delete;
};

} // namespace

endpoint::endpoint(const fabric_domain &parent, const info &source)
    : info_(source.clone()), provider_(parent.provider())
{
	check(fi_endpoint(parent.domain(), info_.get(), ep_.out(), nullptr), "fi_endpoint",
	      provider_);
}

void endpoint::bind(const eq &events)
{
	check(fi_ep_bind(ep_.get(), &events.get()->fid, 0), "fi_ep_bind(EQ)", provider_);
}

void endpoint::bind(const cq &completions, std::uint64_t flags)
{
	check(fi_ep_bind(ep_.get(), &completions.get()->fid, flags), "fi_ep_bind(CQ)", provider_);
}

void endpoint::enable()
{
	check(fi_enable(ep_.get()), "fi_enable", provider_);
}

void endpoint::connect(std::span<const std::uint8_t> private_data)
{
	if (info_->dest_addr == nullptr)
		throw rpmem::error(EDESTADDRREQ,
		                   fmt::format("fi_connect (provider {}): the endpoint "
		                               "has no destination; open it from "
		                               "info::for_connect",
		                               provider_));
	check(fi_connect(ep_.get(), info_->dest_addr, private_data.data(), private_data.size()),
	      "fi_connect", provider_);
}

void endpoint::accept(std::span<const std::uint8_t> private_data)
{
	check(fi_accept(ep_.get(), private_data.data(), private_data.size()), "fi_accept",
	      provider_);
}

void endpoint::shutdown()
{
	// libfabric's sockets provider (1.17) closes a connection's socket twice when fi_shutdown
	// is called: once in fi_shutdown and once in its connection-manager thread, which also
	// closes it when the peer shuts down or vanishes, without telling the other. Between the
	// two closes another thread may have opened a file or socket under the same number, and
	// the second close would take it away (seen with strace: close() = -1 EBADF from both
	// sides of every sockets connection). fi_close closes that socket exactly once and the
	// peer sees the connection end just the same, so with sockets shutdown leaves it to
	// fi_close.
	if (provider_ == "sockets")
		return;
	check(fi_shutdown(ep_.get(), 0), "fi_shutdown", provider_);
}

post_status endpoint::posted(long ret, const char *op, std::size_t len, std::uint64_t addr) const
{
	if (ret == 0)
		return post_status::posted;
	if (ret == -FI_EAGAIN)
		return post_status::again;
	throw_call_error(static_cast<int>(ret),
	                 fmt::format("{}({} bytes, remote address {:#x})", op, len, addr),
	                 provider_);
}

post_status endpoint::send(const void *buf, std::size_t len, void *desc, void *context)
{
	return posted(fi_send(ep_.get(), buf, len, desc, 0, context), "fi_send", len, 0);
}

post_status endpoint::recv(void *buf, std::size_t len, void *desc, void *context)
{
	return posted(fi_recv(ep_.get(), buf, len, desc, 0, context), "fi_recv", len, 0);
}

post_status endpoint::inject(const void *buf, std::size_t len)
{
	return posted(fi_inject(ep_.get(), buf, len, 0), "fi_inject", len, 0);
}

post_status endpoint::write(const void *buf, std::size_t len, void *desc, rma_target dst,
                            void *context)
{
	return posted(fi_write(ep_.get(), buf, len, desc, 0, dst.addr, dst.key, context),
	              "fi_write", len, dst.addr);
}

post_status endpoint::writemsg(const void *buf, std::size_t len, void *desc, rma_target dst,
                               void *context, std::uint64_t flags, std::uint64_t data)
{
	rma_message m(const_cast<void *>(buf), len, desc, dst, context);
	m.msg.data = data;
	return posted(fi_writemsg(ep_.get(), &m.msg, flags), "fi_writemsg", len, dst.addr);
}

post_status endpoint::read(void *buf, std::size_t len, void *desc, rma_target src, void *context)
{
	return posted(fi_read(ep_.get(), buf, len, desc, 0, src.addr, src.key, context), "fi_read",
	              len, src.addr);
}

post_status endpoint::readmsg(void *buf, std::size_t len, void *desc, rma_target src, void *context,
                              std::uint64_t flags)
{
	rma_message m(buf, len, desc, src, context);
	return posted(fi_readmsg(ep_.get(), &m.msg, flags), "fi_readmsg", len, src.addr);
}

std::size_t endpoint::cm_data_size() const
{
	std::size_t size = 0;
	std::size_t optlen = sizeof size;
	check(fi_getopt(&ep_.get()->fid, FI_OPT_ENDPOINT, FI_OPT_CM_DATA_SIZE, &size, &optlen),
	      "fi_getopt(FI_OPT_CM_DATA_SIZE)", provider_);
	return size;
}

} // namespace rpmem::fabric
