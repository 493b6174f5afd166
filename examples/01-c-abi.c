/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * 01-c-abi: the C interface, librpmem.h. Creates a remote pool, persists a string into it,
 * reads it back from the replica, closes, and removes the pool.
 *
 *   cc 01-c-abi.c $(pkg-config --cflags --libs librpmem) -o 01-c-abi
 *   ./01-c-abi [user@]host[:port] pool.set
 */
#include <librpmem.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define POOL_SIZE (8u << 20)
#define DATA_OFFSET 4096u /* the first 4 KiB hold the remote pool's header */

int main(int argc, char *argv[])
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s [user@]host[:port] pool.set\n", argv[0]);
		return 2;
	}
	const char *msg = rpmem_check_version(RPMEM_MAJOR_VERSION, RPMEM_MINOR_VERSION);
	if (msg) {
		fprintf(stderr, "%s\n", msg);
		return 1;
	}
	char *pool =
	    mmap(NULL, POOL_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (pool == MAP_FAILED)
		return 1;

	struct rpmem_pool_attr attr;
	memset(&attr, 0, sizeof(attr));
	memcpy(attr.signature, "EXAMPLE", 7);
	attr.major = 1;
	attr.uuid[0] = 1;

	unsigned nlanes = 4;
	RPMEMpool *rpp = rpmem_create(argv[1], argv[2], pool, POOL_SIZE, &nlanes, &attr);
	if (!rpp) {
		fprintf(stderr, "rpmem_create: %s\n", rpmem_errormsg());
		return 1;
	}
	printf("created %s on %s with %u lanes\n", argv[2], argv[1], nlanes);

	const char *text = "Hello, remote persistent memory!";
	strcpy(pool + DATA_OFFSET, text);
	if (rpmem_persist(rpp, DATA_OFFSET, strlen(text) + 1, 0, 0)) {
		fprintf(stderr, "rpmem_persist: %s\n", rpmem_errormsg());
		return 1;
	}

	char back[64] = "";
	if (rpmem_read(rpp, back, DATA_OFFSET, strlen(text) + 1, 0)) {
		fprintf(stderr, "rpmem_read: %s\n", rpmem_errormsg());
		return 1;
	}
	printf("read back from the replica: \"%s\"\n", back);
	int ok = strcmp(back, text) == 0;

	if (rpmem_close(rpp)) {
		fprintf(stderr, "rpmem_close: %s\n", rpmem_errormsg());
		return 1;
	}
	if (rpmem_remove(argv[1], argv[2], 0)) {
		fprintf(stderr, "rpmem_remove: %s\n", rpmem_errormsg());
		return 1;
	}
	printf("closed and removed: %s\n", ok ? "OK" : "MISMATCH");
	munmap(pool, POOL_SIZE);
	return ok ? 0 : 1;
}
