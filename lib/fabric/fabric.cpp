// SPDX-License-Identifier: BSD-3-Clause
#include "fabric/fabric.hpp"
#include "fabric/library.hpp"

#include "fabric/error.hpp"

#include <cerrno>

namespace rpmem::fabric
{

fabric_domain::fabric_domain(const info &source) : granted_(source.granted())
{
	if (auto why = granted_.unsupported(); !why.empty())
		throw rpmem::error(ENOTSUP, why);
	check(library::open_fabric(source->fabric_attr, fabric_.out(), nullptr), "fi_fabric",
	      provider());
	check(fi_domain(fabric_.get(), source.get(), domain_.out(), nullptr), "fi_domain",
	      provider());
}

} // namespace rpmem::fabric
