// SPDX-License-Identifier: BSD-3-Clause
// Catch2's main, with the report written through as it is produced: a test process that dies
// (a sanitizer's halt_on_error, a signal, a CI time limit) still shows how far it got.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <iostream>

int main(int argc, char *argv[])
{
	std::cout << std::unitbuf;
	return Catch::Session().run(argc, argv);
}
