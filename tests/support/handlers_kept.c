/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Runs with LD_LIBRARY_PATH at tests/support/fake_libfabric.c's libfabric.so.1: a create that
 * fails at once makes librpmem load "libfabric" ahead (lib/fabric/library.cpp), whose
 * constructor installs a SIGSEGV handler of its own, a SIGTERM handler of this program's and
 * ignores SIGINT. Prints what each handler is once the load is over:
 *   "SIGSEGV default"  the load's own handler was undone
 *   "SIGTERM app"      the application's handler, installed meanwhile, stayed
 *   "SIGINT ignored"   so did an application's SIG_IGN
 *   rpmem_handlers_kept TARGET      (TARGET: where nothing listens)
 */
#include "librpmem.h"

#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void app_handler(int sig)
{
	(void)sig;
}

static const char *describe(int sig)
{
	struct sigaction sa;
	sigaction(sig, NULL, &sa);
	if (sa.sa_handler == SIG_DFL)
		return "default";
	if (sa.sa_handler == SIG_IGN)
		return "ignored";
	if (sa.sa_handler == app_handler)
		return "app";
	return "other";
}

int main(int argc, char *argv[])
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s TARGET\n", argv[0]);
		return 2;
	}
	char at[32];
	void (*h)(int) = app_handler;
	void *p;
	memcpy(&p, &h, sizeof(p)); /* ISO C: no function-to-object pointer cast */
	snprintf(at, sizeof(at), "%lx", (unsigned long)p);
	setenv("RPMEM_TEST_APP_HANDLER", at, 1);
	signal(SIGSEGV, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	const size_t size = 8u << 20;
	void *pool = aligned_alloc(4096, size);
	unsigned nlanes = 1;
	struct rpmem_pool_attr attr;
	memset(&attr, 0, sizeof(attr));
	if (!pool || rpmem_create(argv[1], "pool.set", pool, size, &nlanes, &attr)) {
		fprintf(stderr, "rpmem_create on %s did not fail\n", argv[1]);
		return 2;
	}
	/* The load runs on librpmem's thread: wait until the stand-in is mapped, then a little
	 * for the handlers to be put back (they are, right after its dlopen returns). */
	int i;
	for (i = 0; i < 200 && !dlopen("libfabric.so.1", RTLD_NOW | RTLD_NOLOAD); ++i)
		usleep(50000);
	if (i == 200) {
		fprintf(stderr, "libfabric.so.1 never got loaded\n");
		return 2;
	}
	usleep(500000);
	printf("SIGSEGV %s\nSIGTERM %s\nSIGINT %s\n", describe(SIGSEGV), describe(SIGTERM),
	       describe(SIGINT));
	free(pool);
	return 0;
}
