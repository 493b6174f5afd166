// SPDX-License-Identifier: BSD-3-Clause
// Catch2's main, with the report written through as it is produced: a test process that dies
// (a signal, _exit in a library, a CI time limit) still shows how far it got and what failed.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <iostream>

int main(int argc, char *argv[])
{
	std::cout << std::unitbuf;
	return Catch::Session().run(argc, argv);
}
