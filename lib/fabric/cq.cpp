// SPDX-License-Identifier: BSD-3-Clause
#include "fabric/cq.hpp"
#include "fabric/library.hpp"

#include "fabric/error.hpp"

#include <fmt/format.h>

#include <cstdlib>

namespace rpmem::fabric
{

cq::cq(const fabric_domain &parent, const cq_options &options) : provider_(parent.provider())
{
	fi_cq_attr attr{};
	attr.size = options.size;
	attr.format = FI_CQ_FORMAT_DATA;
	attr.wait_obj = to_fi(options.wait);
	attr.wait_cond = FI_CQ_COND_NONE;
	check(fi_cq_open(parent.domain(), &attr, cq_.out(), nullptr), "fi_cq_open", provider_);
}

cq_result cq::read(std::span<cq_entry> out)
{
	return finish(fi_cq_read(cq_.get(), out.data(), out.size()), "fi_cq_read");
}

cq_result cq::sread(std::span<cq_entry> out, std::chrono::milliseconds timeout)
{
	return finish(
	    fi_cq_sread(cq_.get(), out.data(), out.size(), nullptr, to_fi_timeout(timeout)),
	    "fi_cq_sread");
}

cq_result cq::finish(long ret, const char *call)
{
	cq_result result;
	if (ret >= 0)
		result.count = static_cast<std::size_t>(ret);
	else if (ret == -FI_EAVAIL)
		result.error = read_error();
	// -FI_EAGAIN: nothing, timeout or fi_cq_signal (util CQs: tcp); -FI_ECANCELED: fi_cq_signal
	// (sockets); -FI_EINTR: the wait was interrupted (a signal handler ran, or the process was
	// stopped and continued: SIGSTOP/SIGCONT, a debugger, the cgroup freezer), as verbs and the
	// util CQs pass poll()'s and epoll_wait()'s EINTR on. Nothing failed: the caller reads
	// again.
	else if (ret != -FI_EAGAIN && ret != -FI_ETIMEDOUT && ret != -FI_ECANCELED &&
	         ret != -FI_EINTR)
		throw_call_error(static_cast<int>(ret), call, provider_);
	return result;
}

cq_error cq::read_error()
{
	fi_cq_err_entry entry{};
	check(fi_cq_readerr(cq_.get(), &entry, 0), "fi_cq_readerr", provider_);
	cq_error error;
	error.op_context = entry.op_context;
	error.flags = entry.flags;
	error.len = entry.len;
	error.err = entry.err != 0 ? std::abs(entry.err) : FI_EOTHER;
	error.prov_errno = entry.prov_errno;
	char buffer[256] = "";
	const char *text =
	    fi_cq_strerror(cq_.get(), entry.prov_errno, entry.err_data, buffer, sizeof buffer);
	error.text =
	    fmt::format("{} (provider {}, prov_errno {}: {})", library::strerror(error.err),
	                provider_, error.prov_errno, text != nullptr ? text : buffer);
	return error;
}

void cq::progress()
{
	const auto ret = fi_cq_read(cq_.get(), nullptr, 0);
	if (ret < 0 && ret != -FI_EAGAIN && ret != -FI_EAVAIL && ret != -FI_EINTR)
		throw_call_error(static_cast<int>(ret), "fi_cq_read(progress)", provider_);
}

void cq::signal()
{
	check(fi_cq_signal(cq_.get()), "fi_cq_signal", provider_);
}

int cq::wait_fd() const
{
	int fd = -1;
	check(fi_control(&cq_.get()->fid, FI_GETWAIT, &fd), "fi_control(CQ, FI_GETWAIT)",
	      provider_);
	return fd;
}

} // namespace rpmem::fabric
