// SPDX-License-Identifier: BSD-3-Clause
#include "client/remote_pool.hpp"

#include "client/control_session.hpp"
#include "client/data_path.hpp"
#include "client/env.hpp"
#include "fabric/library.hpp"
#include "rpmem/error.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <unistd.h>

namespace rpmem::client
{

namespace ctl = rpmem::control;

namespace
{

bool page_aligned(std::uintptr_t v)
{
	static const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
	return (v & (page - 1)) == 0;
}

/** A name the control protocol cannot carry is refused before SSH and rpmemd are started. */
void check_descriptor_size(const std::string &target, const std::string &descriptor)
{
	if (descriptor.size() > ctl::max_string)
		throw rpmem::error(
		    EINVAL, fmt::format("{}: pool set name '{}...' is {} bytes long, "
		                        "more than the {} rpmemd accepts: use a "
		                        "shorter name",
		                        ssh::parse_target(target).host, descriptor.substr(0, 32),
		                        descriptor.size(), ctl::max_string));
}

void check_pool_args(const std::string &target, const std::string &descriptor, void *addr,
                     std::size_t size, unsigned *nlanes)
{
	if (target.empty())
		throw rpmem::error(EINVAL, "target is empty: give [user@]host[:port]");
	if (descriptor.empty())
		throw rpmem::error(EINVAL, "pool set name is empty");
	check_descriptor_size(target, descriptor);
	if (!addr || !page_aligned(reinterpret_cast<std::uintptr_t>(addr)))
		throw rpmem::error(EINVAL,
		                   fmt::format("pool address {} is not page aligned", addr));
	if (size == 0 || !page_aligned(size))
		throw rpmem::error(EINVAL, fmt::format("pool size {} is not a non-zero multiple "
		                                       "of the page size",
		                                       size));
	if (!nlanes)
		throw rpmem::error(EINVAL, "nlanes is NULL: pass the number of lanes wanted");
	if (*nlanes == 0)
		throw rpmem::error(EINVAL, "*nlanes is 0: ask for at least one lane");
}

} // namespace

remote_pool::remote_pool(std::unique_ptr<control_session> ctl, std::size_t size, bool has_headers)
    : ctl_(std::move(ctl)), size_(size), has_headers_(has_headers)
{
}

remote_pool::~remote_pool()
{
	try {
		close();
	} catch (const std::exception &) {
		// Destructors never throw; close() reported nothing the caller asked for.
	}
	stop_export(); // while what its report reads is still here
}

std::unique_ptr<remote_pool> remote_pool::start(bool create, const std::string &target,
                                                const std::string &descriptor, void *addr,
                                                std::size_t size, unsigned *nlanes,
                                                const ctl::pool_attr *attr,
                                                ctl::pool_attr *attr_out, const pool_options &opts)
{
	check_pool_args(target, descriptor, addr, size, nlanes);
	// libfabric loads and initializes its providers while SSH connects and rpmemd answers:
	// a process's first open takes ~365 ms instead of ~650 (docs/lab/performance-records.md,
	// "Opening a pool").
	fabric::library::load_ahead();
	const settings s = opts.tuning ? *opts.tuning : process_settings();
	auto session = std::make_unique<control_session>(
	    target, opts.command.empty() ? next_command() : opts.command,
	    opts.ssh ? *opts.ssh : ssh::options::from_environment(), s.control_timeout);
	ctl::pool_request req;
	req.pool_size = size;
	req.nlanes = std::min<std::uint32_t>(*nlanes, s.max_nlanes);
	req.provider = s.providers;
	req.descriptor = descriptor;
	if (create && attr && !attr->is_zero())
		req.attr = *attr;
	auto resp = session->request_pool(req, create);

	bool headers = create ? req.attr.has_value() : (attr_out && !resp.attr.is_zero());
	std::unique_ptr<remote_pool> pool(new remote_pool(std::move(session), size, headers));
	pool->fabric_ = resp.fabric;
	pool->method_ = resp.fabric.method;
	pool->remote_size_ = resp.pool_size;
	pool->remote_is_pmem_ = resp.is_pmem;
	try {
		pool->data_ =
		    std::make_unique<data_path>(resp.fabric, pool->ctl_->host(), addr, size,
		                                std::min(req.nlanes, resp.fabric.nlanes), s);
		// Last: until rpmemd reads this, it removes the pool if we vanish.
		if (create)
			pool->ctl_->create_done();
	} catch (...) {
		// The daemon removes a pool it created for us when we say so (or when we vanish).
		try {
			pool->ctl_->close(create ? ctl::close_flag_remove : 0);
		} catch (const std::exception &) {
		}
		pool->closed_ = true;
		throw;
	}
	// A data-path wait outlasts RPMEM_TIMEOUT only while rpmemd answers the keep-alive.
	pool->data_->set_liveness([ctl = pool->ctl_.get()] { return ctl->last_answer(); });
	pool->ctl_->start_keepalive(s.keepalive);
	*nlanes = pool->data_->nlanes();
	if (attr_out)
		*attr_out = resp.attr;
	return pool;
}

std::unique_ptr<remote_pool> remote_pool::create(const std::string &target,
                                                 const std::string &descriptor, void *addr,
                                                 std::size_t size, unsigned *nlanes,
                                                 const ctl::pool_attr *attr,
                                                 const pool_options &opts)
{
	return start(true, target, descriptor, addr, size, nlanes, attr, nullptr, opts);
}

std::unique_ptr<remote_pool> remote_pool::open(const std::string &target,
                                               const std::string &descriptor, void *addr,
                                               std::size_t size, unsigned *nlanes,
                                               ctl::pool_attr *attr_out, const pool_options &opts)
{
	return start(false, target, descriptor, addr, size, nlanes, nullptr, attr_out, opts);
}

void remote_pool::remove(const std::string &target, const std::string &descriptor, int flags,
                         const pool_options &opts)
{
	if (flags & ~static_cast<int>(remove_force | remove_pool_set))
		throw rpmem::error(EINVAL, fmt::format("unknown rpmem_remove flags {:#x}", flags));
	if (target.empty() || descriptor.empty())
		throw rpmem::error(EINVAL, "target and pool set name must not be empty");
	check_descriptor_size(target, descriptor);
	const settings s = opts.tuning ? *opts.tuning : process_settings();
	remove_remote(target, descriptor, flags,
	              opts.command.empty() ? next_command() : opts.command,
	              opts.ssh ? *opts.ssh : ssh::options::from_environment(), s.control_timeout);
}

void remote_pool::do_set_attr(const ctl::pool_attr *attr)
{
	if (closed_)
		throw rpmem::error(EINVAL, "the pool is closed");
	std::optional<ctl::pool_attr> a;
	if (attr && !attr->is_zero())
		a = *attr;
	ctl_->set_attr(a);
}

std::vector<ctl::block_sum> remote_pool::checksums(std::size_t offset, std::size_t length,
                                                   std::uint32_t block)
{
	if (closed_)
		throw rpmem::error(EINVAL, "the pool is closed");
	if (auto f = ctl_->failure())
		throw *f;
	if (length == 0 || offset > size_ || length > size_ - offset)
		throw rpmem::error(EINVAL, fmt::format("checksums: range [{}, {}) is outside the "
		                                       "pool's {} bytes",
		                                       offset, offset + length, size_));
	ctl::checksum_request req{offset, length, block, ctl::checksum_algorithm::xxh3_128};
	std::vector<ctl::block_sum> out(ctl::checksum_count(req));
	ctl_->checksums(req, [&](std::uint64_t first, std::span<const ctl::block_sum> sums) {
		std::copy(sums.begin(), sums.end(),
		          out.begin() + static_cast<std::ptrdiff_t>(first));
	});
	return out;
}

void remote_pool::do_close()
{
	if (closed_.exchange(true))
		return;
	// The daemon first: it stops serving and answers, then our endpoints go quietly.
	try {
		ctl_->close(0);
	} catch (...) {
		if (data_)
			data_->shutdown();
		throw;
	}
	if (data_)
		data_->shutdown();
}

std::optional<session_lost> remote_pool::lost() const
{
	return ctl_->failure();
}

void remote_pool::abandon() noexcept
{
	if (closed_.exchange(true))
		return;
	ctl_->abandon("the session was given up for a new one");
}

pool_report remote_pool::report() const
{
	pool_report r;
	r.provider = fabric_.provider;
	r.method = ctl::to_string(method_);
	r.lanes = nlanes();
	r.stats = stats(nlanes());
	return r;
}

lane_stats remote_pool::stats(unsigned lane) const
{
	return data_->stats(lane);
}

unsigned remote_pool::nlanes() const
{
	return data_->nlanes();
}

const std::string &remote_pool::host() const
{
	return ctl_->host();
}

pool_calls::shape remote_pool::contract() const
{
	return {size_, data_->nlanes(), has_headers_};
}

void remote_pool::check_usable() const
{
	if (auto f = ctl_->failure())
		throw *f;
}

void remote_pool::do_persist(std::size_t offset, std::size_t length, unsigned lane)
{
	data_->persist(offset, length, lane);
}

void remote_pool::do_flush(std::size_t offset, std::size_t length, unsigned lane)
{
	data_->flush(offset, length, lane);
}

void remote_pool::do_drain(unsigned lane)
{
	data_->drain(lane);
}

void remote_pool::persist_post(std::size_t offset, std::size_t length, unsigned lane)
{
	check("persist", offset, length, lane, false);
	data_->persist_post(offset, length, lane);
}

void remote_pool::drain_post(unsigned lane)
{
	check("drain", 0, 0, lane, true);
	data_->drain_post(lane);
}

void remote_pool::drain_ahead(unsigned lane)
{
	check("drain", 0, 0, lane, true);
	data_->drain_ahead(lane);
}

void remote_pool::complete(unsigned lane)
{
	check("complete", 0, 0, lane, true);
	data_->complete(lane);
}

void remote_pool::register_source(const void *addr, std::size_t size)
{
	data_->register_source(addr, size);
}

void remote_pool::flush_from(const void *src, std::size_t offset, std::size_t length, unsigned lane)
{
	check("flush", offset, length, lane, false);
	data_->flush_from(src, offset, length, lane);
}

void remote_pool::do_deep_persist(std::size_t offset, std::size_t length, unsigned lane)
{
	data_->deep_persist(offset, length, lane);
}

void remote_pool::do_read(void *buf, std::size_t offset, std::size_t length, unsigned lane)
{
	data_->read(buf, offset, length, lane);
}

} // namespace rpmem::client
