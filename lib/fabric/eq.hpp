// SPDX-License-Identifier: BSD-3-Clause
// An event queue: connection management events (FI_CONNREQ, FI_CONNECTED, FI_SHUTDOWN) and
// their errors (a rejected or refused connection), with the private data that came with them.
#pragma once

#include "fabric/fabric.hpp"
#include "fabric/fid_owner.hpp"
#include "fabric/info.hpp"
#include "fabric/wait.hpp"

#include <rdma/fi_eq.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace rpmem::fabric
{

struct eq_options {
	std::size_t size = 64;
	wait_object wait = wait_object::unspec;
};

/** One EQ entry: an event, or an error entry when err != 0. */
struct eq_event {
	std::uint32_t type = 0;         // FI_CONNREQ, FI_CONNECTED, FI_SHUTDOWN, ...; 0 for errors
	fid_t fid = nullptr;            // the endpoint (or passive endpoint) concerned
	info conn_info;                 // FI_CONNREQ only: open the accepting endpoint from it
	std::vector<std::uint8_t> data; // private data; for errors the provider's err_data
	int err = 0;                    // positive FI_E* code, e.g. FI_ECONNREFUSED on rejection
	int prov_errno = 0;
	std::string err_text; // fi_strerror + fi_eq_strerror, for messages

	bool is_error() const noexcept { return err != 0; }
};

class eq
{
public:
	/** fi_eq_open on the domain's fabric. Throws rpmem::error. */
	explicit eq(const fabric_domain &parent, const eq_options &options = {});
	/** Reads out what is still queued, then closes the EQ. */
	~eq();
	eq(eq &&) noexcept = default;
	eq &operator=(eq &&other) noexcept;

	/**
	 * The next entry, waiting up to `timeout` (0: do not wait, negative: forever; with
	 * wait_object::none never waits). nullopt when nothing arrived in time, or when the wait
	 * was interrupted (EINTR: a signal, SIGSTOP/SIGCONT): callers keep their own deadline.
	 * Error entries come back as events with err set; a failure of the EQ itself throws
	 * rpmem::error.
	 */
	std::optional<eq_event> read(std::chrono::milliseconds timeout);

	/** Wakes a thread blocked in read(): it returns an event of type FI_NOTIFY. Throws
	 * rpmem::error when the provider refuses the write. */
	void wake();

	/** The fd to poll (wait_object::fd only). Throws rpmem::error otherwise. */
	int wait_fd() const;

	fid_eq *get() const noexcept { return eq_.get(); }
	const std::string &provider() const noexcept { return provider_; }

private:
	eq_event read_error();
	void drain() noexcept;

	fid_owner<fid_eq> eq_;
	wait_object wait_ = wait_object::unspec;
	std::string provider_;
};

} // namespace rpmem::fabric
