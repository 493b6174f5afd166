// SPDX-License-Identifier: BSD-3-Clause
#include "fabric/granted.hpp"

#include <fmt/format.h>

#include <utility>

namespace rpmem::fabric
{
namespace
{

template <typename Bits, std::size_t N>
std::string bit_names(Bits value, const std::pair<Bits, const char *> (&names)[N])
{
	std::string out;
	for (const auto &[bit, name] : names) {
		if ((value & bit) == 0)
			continue;
		if (!out.empty())
			out += ' ';
		out += name;
	}
	return "[" + out + "]";
}

std::string mr_mode_names(int mode)
{
	if (mode == FI_MR_BASIC)
		return "[BASIC]";
	if (mode == FI_MR_SCALABLE)
		return "[SCALABLE]";
	static const std::pair<int, const char *> names[] = {{FI_MR_LOCAL, "LOCAL"},
	                                                     {FI_MR_RAW, "RAW"},
	                                                     {FI_MR_VIRT_ADDR, "VIRT_ADDR"},
	                                                     {FI_MR_ALLOCATED, "ALLOCATED"},
	                                                     {FI_MR_PROV_KEY, "PROV_KEY"},
	                                                     {FI_MR_MMU_NOTIFY, "MMU_NOTIFY"},
	                                                     {FI_MR_RMA_EVENT, "RMA_EVENT"},
	                                                     {FI_MR_ENDPOINT, "ENDPOINT"},
	                                                     {FI_MR_HMEM, "HMEM"}};
	return bit_names(mode, names);
}

std::string order_names(std::uint64_t order)
{
	static const std::pair<std::uint64_t, const char *> names[] = {
	    {FI_ORDER_RAR, "RAR"}, {FI_ORDER_RAW, "RAW"}, {FI_ORDER_RAS, "RAS"},
	    {FI_ORDER_WAR, "WAR"}, {FI_ORDER_WAW, "WAW"}, {FI_ORDER_WAS, "WAS"},
	    {FI_ORDER_SAR, "SAR"}, {FI_ORDER_SAW, "SAW"}, {FI_ORDER_SAS, "SAS"}};
	return bit_names(order, names);
}

} // namespace

int mr_mode_bits(int mr_mode, std::uint64_t mode)
{
	int bits = mr_mode;
	if (mr_mode == FI_MR_BASIC)
		bits = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	else if (mr_mode == FI_MR_SCALABLE)
		bits = 0;
	if (mode & FI_LOCAL_MR)
		bits |= FI_MR_LOCAL;
	return bits;
}

granted read_granted(const fi_info &info)
{
	granted g;
	if (info.fabric_attr != nullptr) {
		g.provider = info.fabric_attr->prov_name ? info.fabric_attr->prov_name : "";
		g.fabric_name = info.fabric_attr->name ? info.fabric_attr->name : "";
	}
	g.caps = info.caps;
	g.mode = info.mode;
	g.addr_format = info.addr_format;
	g.rma_pmem = (info.caps & FI_RMA_PMEM) != 0;
	g.progress_thread = g.provider == "sockets";
	if (const fi_domain_attr *d = info.domain_attr) {
		g.domain_name = d->name ? d->name : "";
		g.mr_mode_granted = d->mr_mode;
		g.mr_mode = mr_mode_bits(d->mr_mode, info.mode);
		g.tx_ctx_cnt = d->tx_ctx_cnt;
		g.rx_ctx_cnt = d->rx_ctx_cnt;
		g.cq_cnt = d->cq_cnt;
		g.ep_cnt = d->ep_cnt;
		g.cq_data_size = d->cq_data_size;
	}
	if (const fi_ep_attr *e = info.ep_attr)
		g.max_msg_size = e->max_msg_size;
	if (const fi_tx_attr *t = info.tx_attr) {
		g.msg_order = t->msg_order;
		g.inject_size = t->inject_size;
		g.tx_size = t->size;
	}
	if (info.rx_attr != nullptr)
		g.rx_size = info.rx_attr->size;
	return g;
}

std::string granted::unsupported() const
{
	if (mr_endpoint())
		return fmt::format("provider {} binds every memory region to one endpoint "
		                   "(FI_MR_ENDPOINT), which rpmem does not support: a pool has one "
		                   "remote key for all its connections; choose another provider "
		                   "(RPMEM_PROVIDER)",
		                   provider);
	return {};
}

std::string granted::describe() const
{
	return fmt::format("{} fabric {} domain {}: mr_mode {} msg_order {} rma_pmem {} "
	                   "context {} max_msg {} inject {} tx {} rx {} tx_ctx {} rx_ctx {} "
	                   "cq_cnt {} ep_cnt {} addr_format {} progress {} cq_data {}",
	                   provider, fabric_name, domain_name,
	                   mr_mode == mr_mode_granted
	                       ? mr_mode_names(mr_mode)
	                       : mr_mode_names(mr_mode_granted) + " = " + mr_mode_names(mr_mode),
	                   order_names(msg_order), rma_pmem, needs_context(), max_msg_size,
	                   inject_size, tx_size, rx_size, tx_ctx_cnt, rx_ctx_cnt, cq_cnt, ep_cnt,
	                   addr_format, progress_thread ? "thread" : "in calls", cq_data_size);
}

} // namespace rpmem::fabric
