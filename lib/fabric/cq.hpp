// SPDX-License-Identifier: BSD-3-Clause
// A completion queue (FI_CQ_FORMAT_DATA). Reads return completions or one decoded error
// completion; blocking reads wait on the provider's wait object instead of spinning, and
// signal() wakes a thread blocked in one (shutdown of a worker).
#pragma once

#include "fabric/fabric.hpp"
#include "fabric/fid_owner.hpp"
#include "fabric/wait.hpp"

#include <rdma/fi_eq.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace rpmem::fabric
{

using cq_entry = fi_cq_data_entry;

struct cq_options {
	std::size_t size = 0; // 0: provider default
	wait_object wait = wait_object::unspec;
};

/** One error completion: which operation failed and why. */
struct cq_error {
	void *op_context = nullptr;
	std::uint64_t flags = 0; // FI_SEND, FI_RECV, FI_RMA | FI_WRITE, ...
	std::size_t len = 0;
	int err = 0;        // positive FI_E* code (FI_ECANCELED after a disconnect, ...)
	int prov_errno = 0; // the provider's own code (verbs: the ibv_wc_status)
	// fi_strerror, then the provider's name, prov_errno and fi_cq_strerror of it: "Input/output
	// error (provider verbs, prov_errno 10: remote access error)".
	std::string text;
};

/**
 * What one read produced: `count` entries, or an error completion, or nothing (no completion
 * ready, timeout, signal(), or a wait interrupted by a signal or a stop and continue of the
 * process: providers do not tell these apart, so a woken thread checks why).
 */
struct cq_result {
	std::size_t count = 0;
	std::optional<cq_error> error;
};

class cq
{
public:
	/** fi_cq_open. Throws rpmem::error. */
	explicit cq(const fabric_domain &parent, const cq_options &options = {});

	/** Non-blocking: whatever completions are ready (count 0 when none). Drives progress. */
	cq_result read(std::span<cq_entry> out);
	/**
	 * Blocks until at least one completion, an error completion, signal() or `timeout`
	 * (negative: forever); count 0 and no error on timeout. Needs a wait object.
	 */
	cq_result sread(std::span<cq_entry> out, std::chrono::milliseconds timeout);
	/** Drives the provider's progress without taking a completion (a read of none): what frees
	 *  a full transmit queue where the provider moves data only inside calls (tcp). */
	void progress();
	/** Wakes a thread blocked in sread: it returns nothing, as on a timeout. */
	void signal();
	/** The fd to poll (wait_object::fd only). Throws rpmem::error otherwise. */
	int wait_fd() const;

	fid_cq *get() const noexcept { return cq_.get(); }
	const std::string &provider() const noexcept { return provider_; }

private:
	cq_result finish(long ret, const char *call);
	cq_error read_error();

	fid_owner<fid_cq> cq_;
	std::string provider_;
};

} // namespace rpmem::fabric
