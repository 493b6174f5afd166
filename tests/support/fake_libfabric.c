/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A stand-in libfabric.so.1 for the handlers test (tests/support/handlers_kept.c): no
 * fi_getinfo, so loading it fails after its constructor ran. The constructor does what
 * libinfinipath's does, installing a SIGSEGV handler of its own, and what an application's
 * other thread may do while rpmem loads libfabric: a SIGTERM handler in the program (its
 * address in RPMEM_TEST_APP_HANDLER) and SIGINT ignored. lib/fabric/library.cpp must undo the
 * first and keep the other two.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void own_handler(int sig)
{
	(void)sig;
	_exit(1);
}

__attribute__((constructor)) static void install(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = own_handler;
	sigaction(SIGSEGV, &sa, NULL);
	const char *app = getenv("RPMEM_TEST_APP_HANDLER");
	if (app) {
		void *at = (void *)(unsigned long)strtoull(app, NULL, 16);
		void (*handler)(int);
		memcpy(&handler, &at, sizeof(handler)); /* ISO C: no object-to-function cast */
		sa.sa_handler = handler;
		sigaction(SIGTERM, &sa, NULL);
	}
	sa.sa_handler = SIG_IGN;
	sigaction(SIGINT, &sa, NULL);
}
