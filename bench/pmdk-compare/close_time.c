// SPDX-License-Identifier: BSD-3-Clause
// Times rpmem_create and rpmem_close with whichever librpmem.so.1 is loaded (PMDK's or ours):
// close_time TARGET POOLSET PART-FILE REPS (the part is removed before each create).
#include <librpmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}
static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}
int main(int argc, char **argv)
{
	const char *target = argv[1], *set = argv[2], *part = argv[3];
	int reps = atoi(argv[4]);
	size_t size = 32 << 20;
	void *pool = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	double c[64], cr[64];
	for (int i = 0; i < reps; i++) {
		unlink(part);
		struct rpmem_pool_attr attr;
		memset(&attr, 0, sizeof attr);
		memcpy(attr.signature, "CLOSET", 6);
		attr.major = 1;
		unsigned nlanes = 4;
		double t0 = now_ms();
		RPMEMpool *p = rpmem_create(target, set, pool, size, &nlanes, &attr);
		if (!p) {
			fprintf(stderr, "create: %s\n", rpmem_errormsg());
			return 1;
		}
		double t1 = now_ms();
		memset((char *)pool + 4096, i, 4096);
		if (rpmem_persist(p, 4096, 4096, 0, 0)) {
			fprintf(stderr, "persist: %s\n", rpmem_errormsg());
			return 1;
		}
		double t2 = now_ms();
		if (rpmem_close(p)) {
			fprintf(stderr, "close: %s\n", rpmem_errormsg());
			return 1;
		}
		c[i] = now_ms() - t2;
		cr[i] = t1 - t0;
	}
	qsort(c, reps, sizeof c[0], cmp);
	qsort(cr, reps, sizeof cr[0], cmp);
	printf("close_ms %.2f create_ms %.1f\n", c[reps / 2], cr[reps / 2]);
	return 0;
}
