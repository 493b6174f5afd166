// SPDX-License-Identifier: BSD-3-Clause
// Internal to target.cpp and target_worker.cpp: the fabric target of one session. The accept
// side (listen, admit connections that present the session's secret, stop) is in target.cpp;
// the workers that serve lane requests are in target_worker.cpp.
#pragma once

#include "target.hpp"

#include "port_guard.hpp"

#include "fabric/cq.hpp"
#include "fabric/endpoint.hpp"
#include "fabric/eq.hpp"
#include "fabric/fabric.hpp"
#include "fabric/info.hpp"
#include "fabric/mr.hpp"
#include "fabric/page_buffer.hpp"
#include "fabric/passive_endpoint.hpp"
#include "fabric/waiter.hpp"
#include "target_plan.hpp"

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace rpmemd::fabric_detail
{

namespace ctl = rpmem::control;
namespace fab = rpmem::fabric;

inline std::int64_t now_ns()
{
	return std::chrono::duration_cast<std::chrono::nanoseconds>(
	           std::chrono::steady_clock::now().time_since_epoch())
	    .count();
}

struct connection;

/** Context of one posted receive: which connection and which buffer slot. */
struct recv_slot {
	fi_context fctx; // first: libfabric's FI_CONTEXT mode writes here
	struct connection *conn;
	std::uint32_t index;
};

struct connection {
	std::uint32_t index = 0;
	std::unique_ptr<fab::endpoint> ep;   // owned by the accept thread
	std::atomic<fab::endpoint *> live{}; // what workers use: published before any receive
	std::vector<recv_slot> slots;
	std::atomic<bool> connected{false};
	std::atomic<bool> closed{false};
	unsigned worker = 0;
};

class fabric_target final : public target
{
public:
	explicit fabric_target(const target_params &p);
	~fabric_target() override { stop(); }

	const ctl::fabric_params &params() const override { return params_; }
	bool connected() const override { return all_connected_.load(); }
	bool failed() const override { return failed_.load(); }
	std::int64_t last_activity() const override { return last_activity_.load(); }
	served_counts served() const override;

	void stop() override;

private:
	// Construction, in order.
	void listen(const target_params &p);
	target_plan size(const target_params &p, ctl::persist_method method);
	void allocate(const target_plan &plan);
	void announce(const target_params &p, ctl::persist_method method);
	void start_threads();

	// The accept thread (target.cpp).
	void accept_loop();

	/** Lets the guard close silent connections to the port, at most every 100 ms. */
	void sweep();
	connection *find(fid_t fid);
	void handle_event(fab::eq_event &ev);

	/** Accepts a connection only with the session's secret and an unused endpoint index. */
	void on_connreq(fab::eq_event &ev);
	/** Why a connection request presenting `cd` (nullptr: `size` bytes that do not decode)
	 *  is refused; empty when it is accepted. */
	std::string refusal(const rpmem::lane::conn_data *cd, std::size_t size) const;
	/** Stops listening: every connection the session announced is up. */
	void close_listener();

	// The workers (target_worker.cpp).
	std::uint8_t *slot_buffer(const connection &c, std::uint32_t slot);
	/** Posts with op until the provider takes it (true), driving progress on the
	 *  connection's CQ while its queue is full; false once the target stops, or when the
	 *  provider refused for stall_timeout (then the connection has failed, logged once). */
	template <class Post> bool post_bounded(connection &c, Post &&op, const char *what);
	bool post_recv(fab::endpoint &ep, connection &c, std::uint32_t slot);
	void worker_loop(unsigned w);
	void on_cq_error(const fab::cq_error &e);
	void serve(const fab::cq_entry &entry);

	persist_region &region_;
	rpmem::fabric::wait_mode wait_;
	std::chrono::milliseconds stall_timeout_;
	std::uint32_t nlanes_ = 0;
	std::uint32_t nendpoints_ = 0;
	unsigned nworkers_ = 0;
	std::uint32_t queue_depth_ = 0;
	rpmem::fabric::endpoint_sizes endpoint_sizes_; // each connection's tx and rx depths
	std::size_t cq_size_ = 0;
	std::uint32_t inline_max_ = 0;
	std::size_t slot_size_ = 0;
	lane_limits limits_;
	ctl::fabric_params params_;

	fab::info listen_info_;
	fab::info port_info_; // the listener's own, for a port of port-range (listen_in_range)
	std::unique_ptr<fab::fabric_domain> domain_;
	std::unique_ptr<fab::eq> eq_;
	std::unique_ptr<fab::passive_endpoint> pep_;
	std::unique_ptr<fab::memory_region> pool_mr_;
	std::vector<std::unique_ptr<fab::cq>> cqs_;
	fab::page_buffer buffers_; // receive slots: whole pages (page_buffer.hpp: fork safety)
	std::unique_ptr<fab::memory_region> recv_mr_;
	std::vector<std::unique_ptr<connection>> conns_;
	// Used by the accept thread only.
	std::unique_ptr<port_guard> guard_;
	std::chrono::steady_clock::time_point last_sweep_{};
	std::size_t silent_closed_ = 0;

	std::thread accept_thread_;
	std::vector<std::thread> workers_;
	std::mutex stop_mutex_;
	bool stopped_ = false;
	std::atomic<bool> stop_{false};
	std::atomic<bool> all_connected_{false};
	std::atomic<bool> failed_{false};
	std::atomic<std::uint32_t> nconnected_{0};
	std::atomic<std::int64_t> last_activity_{0};
	std::atomic<std::uint64_t> bytes_{0};
	std::atomic<std::uint64_t> requests_{0};
	std::atomic<std::uint64_t> refused_{0};
	std::array<std::atomic<std::uint64_t>, 40> service_ns_log2_{};
};

} // namespace rpmemd::fabric_detail
