// SPDX-License-Identifier: BSD-3-Clause
// exit_open TARGET POOLSET MICROSECONDS: creates a remote pool through the C ABI, persists a
// page, lets the keep-alive run for MICROSECONDS, and returns from main with the pool still
// open, as an application may (tests/integration/capi_test.cpp: exit with a pool open).
//
// exit_open TARGET POOLSET hold-exit: the same, but once stdin closes it returns from main with
// the pool open (the test freezes rpmemd meanwhile: exit must not wait for it).
//
// exit_open TARGET POOLSET hold: creates the pool, persists a page, prints "ready" and waits
// for its stdin to close (the test kills rpmemd meanwhile); then persists again and closes,
// printing "persist <errno>" and "close <errno>" (0: success), and exits 0. A failure the
// program meets with an open pool is what RPMEM_STATS_FILE must report (capi_test.cpp).
#include <librpmem.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: exit_open TARGET POOLSET MICROSECONDS|hold|hold-exit\n");
		return 2;
	}
	const size_t size = 8 << 20;
	void *mem = aligned_alloc(4096, size);
	if (!mem)
		return 2;
	memset(mem, 0x5a, size);
	unsigned nlanes = 1;
	RPMEMpool *pool = rpmem_create(argv[1], argv[2], mem, size, &nlanes, NULL);
	if (!pool) {
		fprintf(stderr, "rpmem_create: %s\n", rpmem_errormsg());
		return 2;
	}
	if (rpmem_persist(pool, 4096, 4096, 0, 0) != 0) {
		fprintf(stderr, "rpmem_persist: %s\n", rpmem_errormsg());
		return 2;
	}
	const int hold_exit = strcmp(argv[3], "hold-exit") == 0;
	if (hold_exit || strcmp(argv[3], "hold") == 0) {
		printf("ready\n");
		fflush(stdout);
		char buf[64];
		while (fread(buf, 1, sizeof(buf), stdin) > 0)
			;
	}
	if (hold_exit) {
		printf("exiting with the pool open\n");
		fflush(stdout);
		return 0;
	}
	if (strcmp(argv[3], "hold") == 0) {
		int r = rpmem_persist(pool, 8192, 4096, 0, 0);
		printf("persist %d\n", r == 0 ? 0 : errno);
		r = rpmem_close(pool);
		printf("close %d\n", r == 0 ? 0 : errno);
		free(mem);
		return 0;
	}
	usleep((useconds_t)atoi(argv[3]));
	printf("exiting with the pool open\n");
	return 0;
}
