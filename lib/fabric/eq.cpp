// SPDX-License-Identifier: BSD-3-Clause
#include "fabric/eq.hpp"
#include "fabric/library.hpp"

#include "fabric/error.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <cstring>

namespace rpmem::fabric
{
namespace
{

// Connection private data is small (verbs/IB: 56 B, tcp and sockets: 256 B); room to spare.
constexpr std::size_t max_cm_data = 1024;

/** An fi_eq_cm_entry followed by its private data (a flexible array member in C). */
struct cm_buffer {
	alignas(fi_eq_cm_entry) std::uint8_t bytes[sizeof(fi_eq_cm_entry) + max_cm_data];

	fi_eq_cm_entry entry() const
	{
		fi_eq_cm_entry e;
		std::memcpy(&e, bytes, sizeof e);
		return e;
	}
	const std::uint8_t *data() const { return bytes + sizeof(fi_eq_cm_entry); }
};

} // namespace

eq::eq(const fabric_domain &parent, const eq_options &options)
    : wait_(options.wait), provider_(parent.provider())
{
	fi_eq_attr attr{};
	attr.size = options.size;
	attr.wait_obj = to_fi(options.wait);
	// Writable, so that wake() works: the sockets provider refuses fi_eq_write on an EQ
	// opened without FI_WRITE (tcp's util EQ does not check).
	attr.flags = FI_WRITE;
	check(fi_eq_open(parent.fabric(), &attr, eq_.out(), nullptr), "fi_eq_open", provider_);
}

eq::~eq()
{
	drain();
}

eq &eq::operator=(eq &&other) noexcept
{
	if (this != &other) {
		drain();
		eq_ = std::move(other.eq_);
		wait_ = other.wait_;
		provider_ = std::move(other.provider_);
	}
	return *this;
}

void eq::drain() noexcept
{
	if (!eq_.get())
		return;
	// The sockets provider's fi_close frees no entry still queued (sock_eq_fi_close in
	// libfabric 1.17): a wake() nobody read, an FI_SHUTDOWN after the last read, would leak.
	// Read them out first (a connection request's fi_info goes with its event).
	try {
		for (int i = 0; i < 4096 && read(std::chrono::milliseconds(0)); ++i) {
		}
	} catch (const rpmem::error &) {
		// An EQ that cannot be read any more has nothing left to free.
	}
}

std::optional<eq_event> eq::read(std::chrono::milliseconds timeout)
{
	cm_buffer buffer;
	std::uint32_t type = 0;
	const bool block = wait_ != wait_object::none && timeout.count() != 0;
	const ssize_t ret =
	    block ? fi_eq_sread(eq_.get(), &type, &buffer, sizeof buffer, to_fi_timeout(timeout), 0)
	          : fi_eq_read(eq_.get(), &type, &buffer, sizeof buffer, 0);
	// -FI_EINTR: the wait was interrupted (a signal, or SIGSTOP/SIGCONT of the process: the
	// util EQs pass epoll_wait()'s EINTR on), which is no failure of the EQ: nothing arrived
	// yet.
	if (ret == -FI_EAGAIN || ret == -FI_ETIMEDOUT || ret == -FI_EINTR)
		return std::nullopt;
	if (ret == -FI_EAVAIL)
		return read_error();
	check(ret, block ? "fi_eq_sread" : "fi_eq_read", provider_);

	if (static_cast<std::size_t>(ret) < sizeof(fi_eq_cm_entry))
		throw rpmem::error(EPROTO,
		                   fmt::format("fi_eq_sread returned a {}-byte entry for event "
		                               "{}, shorter than a CM entry (provider {})",
		                               ret, type, provider_));
	// Every event bound here is a CM event; others (FI_MR_COMPLETE, ...) are never requested.
	const fi_eq_cm_entry entry = buffer.entry();
	eq_event event;
	event.type = type;
	event.fid = entry.fid;
	if (type == FI_CONNREQ)
		event.conn_info =
		    info(entry.info); // the caller owns it; other events leave it unset
	const auto data_len = static_cast<std::size_t>(ret) - sizeof entry;
	event.data.assign(buffer.data(), buffer.data() + data_len);
	return event;
}

eq_event eq::read_error()
{
	fi_eq_err_entry entry{};
	check(fi_eq_readerr(eq_.get(), &entry, 0), "fi_eq_readerr", provider_);
	eq_event event;
	event.fid = entry.fid;
	event.err = entry.err != 0 ? std::abs(entry.err) : FI_EOTHER;
	event.prov_errno = entry.prov_errno;
	const auto *err_data = static_cast<const std::uint8_t *>(entry.err_data);
	if (err_data != nullptr)
		event.data.assign(err_data, err_data + entry.err_data_size);
	char buffer[256] = "";
	const char *text =
	    fi_eq_strerror(eq_.get(), entry.prov_errno, entry.err_data, buffer, sizeof buffer);
	event.err_text =
	    fmt::format("{} (provider {}, prov_errno {}: {})", library::strerror(event.err),
	                provider_, event.prov_errno, text != nullptr ? text : buffer);
	return event;
}

void eq::wake()
{
	fi_eq_entry entry{};
	check(fi_eq_write(eq_.get(), FI_NOTIFY, &entry, sizeof entry, 0), "fi_eq_write(FI_NOTIFY)",
	      provider_);
}

int eq::wait_fd() const
{
	int fd = -1;
	check(fi_control(&eq_.get()->fid, FI_GETWAIT, &fd), "fi_control(EQ, FI_GETWAIT)",
	      provider_);
	return fd;
}

} // namespace rpmem::fabric
