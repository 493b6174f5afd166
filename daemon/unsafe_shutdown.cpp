// SPDX-License-Identifier: BSD-3-Clause
#include "unsafe_shutdown.hpp"

#include <rpmem/error.hpp>

#include <fmt/format.h>
#include <libpmem2.h>

#include <cerrno>
#include <memory>
#include <string>

namespace rpmemd
{
namespace
{

struct source_deleter {
	void operator()(pmem2_source *s) const noexcept { pmem2_source_delete(&s); }
};
using source_ptr = std::unique_ptr<pmem2_source, source_deleter>;

[[noreturn]] void unreadable(const part_file &part, int rc, const char *what)
{
	throw rpmem::error(
	    rc == -EPERM || rc == -EACCES ? EACCES : EIO,
	    fmt::format("cannot read the {} of the device under part {}: {}; "
	                "rpmemd needs it to detect a lost pool (as PMDK did): "
	                "let the SSH user read it (ndctl), or keep the pool on a "
	                "device without one",
	                what, part.path,
	                *pmem2_errormsg() ? pmem2_errormsg() : "libpmem2 gave no reason"));
}

/** The device id's checksum; 0-padded like PMDK's, whether or not the device has an id. */
std::uint64_t id_checksum(const pmem2_source *src, const part_file &part)
{
	std::size_t len = 0;
	int rc = pmem2_source_device_id(src, nullptr, &len);
	if (rc == PMEM2_E_NOSUPP)
		return device_id_checksum({});
	if (rc != 0)
		unreadable(part, rc, "id");
	std::string id(len, '\0');
	rc = pmem2_source_device_id(src, id.data(), &len);
	if (rc != 0)
		unreadable(part, rc, "id");
	return device_id_checksum(std::string_view(id.data(), len));
}

} // namespace

device_state devices_of(std::span<const part_file> parts)
{
	device_state sum;
	for (const auto &part : parts) {
		pmem2_source *raw = nullptr;
		if (int rc = pmem2_source_from_fd(&raw, part.fd.get()); rc != 0)
			unreadable(part, rc, "description");
		source_ptr src(raw);
		std::uint64_t usc = 0;
		int rc = pmem2_source_device_usc(src.get(), &usc);
		if (rc != 0 && rc != PMEM2_E_NOSUPP)
			unreadable(part, rc, "unsafe shutdown count");
		sum.usc += rc == 0 ? usc : 0;
		sum.id_sum += id_checksum(src.get(), part);
	}
	return sum;
}

} // namespace rpmemd
