// SPDX-License-Identifier: BSD-3-Clause
// rpmemd's names for the local pool layer (lib/pmdk): PMDK's pool header, the contiguous
// mapping of a pool's parts, part files and sets and their locks, Device DAX, and the SIGBUS
// report of a part that lost its backing.
#pragma once

#include "pmdk/bus_error.hpp"
#include "pmdk/device_dax.hpp"
#include "pmdk/part_file.hpp"
#include "pmdk/part_set.hpp"
#include "pmdk/pool_header.hpp"
#include "pmdk/pool_map.hpp"

namespace rpmemd
{
using namespace rpmem::pmdk;
} // namespace rpmemd
