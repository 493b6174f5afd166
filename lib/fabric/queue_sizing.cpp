// SPDX-License-Identifier: BSD-3-Clause
#include "fabric/queue_sizing.hpp"

#include <algorithm>

namespace rpmem::fabric
{

endpoint_sizes ask_sizes(const queue_demand &d)
{
	// The smallest n with n - n / 4 >= receives (posted_recv_limit's rule).
	std::size_t rx = d.receives + d.receives / 4; // a lower bound
	while (rx - rx / 4 < d.receives)
		++rx;
	return {std::max<std::size_t>(d.transmits, 1), std::max<std::size_t>(rx, 1)};
}

std::size_t cq_entries(const queue_demand &d, const endpoint_sizes &granted)
{
	return std::max<std::size_t>(d.endpoints, 1) *
	       (granted.rx_size + granted.tx_size + d.remote_events);
}

verbs_credits verbs_credit_check(std::size_t cq_size, std::size_t endpoints, endpoint_sizes sizes)
{
	const std::size_t rx = sizes.rx_size ? sizes.rx_size : verbs_default_size;
	const std::size_t tx = sizes.tx_size ? sizes.tx_size : verbs_default_size;
	verbs_credits c;
	std::size_t credits = cq_size;
	for (std::size_t e = 0; e < endpoints; ++e) {
		if (credits < rx)
			++c.unreserved; // "Rx CQ is fully reserved": nothing reserved
		else
			credits -= rx;
	}
	c.transmit = credits;
	c.needed = endpoints * tx;
	return c;
}

} // namespace rpmem::fabric
