// SPDX-License-Identifier: BSD-3-Clause
// rpmemd's name for the shared PMDK pool header code (lib/pmdk/pool_header.hpp).
#pragma once

#include "pmdk/pool_header.hpp"

namespace rpmemd
{
using namespace rpmem::pmdk;
} // namespace rpmemd
