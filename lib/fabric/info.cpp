// SPDX-License-Identifier: BSD-3-Clause
#include "fabric/info.hpp"
#include "fabric/library.hpp"

#include "fabric/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <utility>

namespace rpmem::fabric
{
namespace
{

/** The wishes a provider may not grant, dropped one by one until fi_getinfo matches. */
struct wishes {
	bool rma_pmem;
	bool order;
};
constexpr wishes relaxations[] = {{true, true}, {false, true}, {true, false}, {false, false}};

struct info_list_deleter {
	void operator()(fi_info *i) const noexcept { library::freeinfo(i); }
};
using info_list = std::unique_ptr<fi_info, info_list_deleter>;

info_list make_hints(const request &req, wishes w)
{
	info_list hints(library::allocinfo());
	if (!hints)
		throw rpmem::error(ENOMEM, "fi_allocinfo failed: out of memory");
	hints->ep_attr->type = FI_EP_MSG;
	hints->caps = FI_MSG | FI_RMA | (w.rma_pmem ? FI_RMA_PMEM : 0);
	hints->mode = FI_CONTEXT | FI_RX_CQ_DATA;
	hints->addr_format = FI_SOCKADDR;
	hints->domain_attr->threading = FI_THREAD_SAFE;
	switch (req.mr) {
	case mr_mode::automatic:
		// Not FI_MR_ENDPOINT: a provider that needs it is not offered (granted.hpp).
		hints->domain_attr->mr_mode =
		    FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
		break;
	case mr_mode::basic:
		hints->domain_attr->mr_mode = FI_MR_BASIC;
		hints->mode |= FI_LOCAL_MR;
		break;
	case mr_mode::scalable:
		hints->domain_attr->mr_mode = FI_MR_SCALABLE;
		hints->mode |= FI_LOCAL_MR;
		break;
	}
	hints->tx_attr->msg_order = w.order ? FI_ORDER_RAW | FI_ORDER_SAW : FI_ORDER_NONE;
	hints->tx_attr->size = req.tx_size;
	hints->rx_attr->size = req.rx_size;
	if (!req.provider.empty())
		hints->fabric_attr->prov_name =
		    strdup(req.provider.c_str()); // freed by fi_freeinfo
	return hints;
}

info_list dup_or_throw(const fi_info *source)
{
	info_list copy(library::dupinfo(source));
	if (!copy)
		throw rpmem::error(ENOMEM,
		                   fmt::format("fi_dupinfo failed (provider {}): out of memory",
		                               source->fabric_attr->prov_name));
	return copy;
}

const char *or_null(const std::string &s)
{
	return s.empty() ? nullptr : s.c_str();
}

/** The first entry served by exactly the requested provider (not a utility layered on it). */
fi_info *pick(fi_info *list, const std::string &provider)
{
	for (fi_info *i = list; i != nullptr; i = i->next) {
		if (provider.empty() || provider == i->fabric_attr->prov_name)
			return i;
	}
	return nullptr;
}

} // namespace

info::~info()
{
	library::freeinfo(info_);
}

info::info(info &&other) noexcept : info_(std::exchange(other.info_, nullptr)) {}

info &info::operator=(info &&other) noexcept
{
	if (this != &other) {
		library::freeinfo(info_);
		info_ = std::exchange(other.info_, nullptr);
	}
	return *this;
}

namespace
{

/** fi_getinfo with the hints of `req` and `w`: the first entry of the provider, or the code. */
int attempt(const std::string &node, const std::string &service, std::uint64_t flags,
            const request &req, wishes w, info &out)
{
	info_list hints = make_hints(req, w);
	fi_info *raw = nullptr;
	const auto version = req.mr == mr_mode::automatic ? api_version : legacy_api_version;
	int ret =
	    library::getinfo(version, or_null(node), or_null(service), flags, hints.get(), &raw);
	info_list found(raw);
	if (ret != 0)
		return ret;
	fi_info *match = pick(found.get(), req.provider);
	if (!match)
		return -FI_ENODATA;
	out = info(dup_or_throw(match).release());
	return 0;
}

/**
 * The queue depths of `req` where the provider grants them; where it does not (a depth above
 * its maximum: sockets takes 256 at most, tcp 1024, verbs its device's), the deepest it grants
 * between the request and its default (`fallback`, found with the default depths): each step
 * asks three quarters of the last, never less than the default.
 */
info with_sizes(const std::string &node, const std::string &service, std::uint64_t flags,
                const request &req, wishes w, info fallback)
{
	const std::size_t def_tx = fallback->tx_attr->size, def_rx = fallback->rx_attr->size;
	request r = req;
	for (;;) {
		info sized;
		if (attempt(node, service, flags, r, w, sized) == 0)
			return sized;
		if (r.tx_size <= def_tx && r.rx_size <= def_rx)
			return fallback;
		if (r.tx_size > def_tx)
			r.tx_size = std::max(def_tx, r.tx_size * 3 / 4);
		if (r.rx_size > def_rx)
			r.rx_size = std::max(def_rx, r.rx_size * 3 / 4);
	}
}

} // namespace

info info::query(const std::string &node, const std::string &service, std::uint64_t flags,
                 const request &req)
{
	// The wishes first, at the provider's default depths; then the depths asked for.
	request defaults = req;
	defaults.tx_size = defaults.rx_size = 0;
	int ret = -FI_ENODATA;
	for (const wishes &w : relaxations) {
		info found;
		ret = attempt(node, service, flags, defaults, w, found);
		if (ret == -FI_ENODATA)
			continue;
		if (ret != 0)
			break;
		if (req.tx_size == 0 && req.rx_size == 0)
			return found;
		return with_sizes(node, service, flags, req, w, std::move(found));
	}
	throw call_error(ret,
	                 fmt::format("fi_getinfo(node {}, service {}, FI_EP_MSG, FI_MSG|FI_RMA, "
	                             "MR mode {})",
	                             node.empty() ? "-" : node, service.empty() ? "-" : service,
	                             to_string(req.mr)),
	                 req.provider,
	                 "check the address and that `fi_info -t FI_EP_MSG` lists the provider");
}

info info::for_listen(const std::string &node, const request &req)
{
	return query(node, {}, FI_SOURCE, req);
}

info info::for_connect(const std::string &node, std::uint16_t port, const request &req)
{
	return query(node, std::to_string(port), 0, req);
}

info info::clone() const
{
	return info(dup_or_throw(info_).release());
}

fi_info *info::release() noexcept
{
	return std::exchange(info_, nullptr);
}

std::string info::provider() const
{
	if (info_ == nullptr || info_->fabric_attr == nullptr || !info_->fabric_attr->prov_name)
		return {};
	return info_->fabric_attr->prov_name;
}

} // namespace rpmem::fabric
