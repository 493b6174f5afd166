/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmemobj_seq: stock libpmemobj, numbered transactions, for the prefix-consistency test of
 * asynchronous replication (tests/integration/async_capi_test.cpp).
 *
 *   pmemobj_seq run POOLSET STATE   creates the pool (with its REPLICA line), then runs
 *                                   transactions 1, 2, 3, ... until killed: transaction k
 *                                   writes k into every object (of several sizes) and the
 *                                   root. After each commit it records k and the time in
 *                                   STATE (a shared file the test reads after the kill).
 *   pmemobj_seq check POOLSET       opens the pool (a promoted replica) and prints "state K"
 *                                   when every object holds the same K throughout, "state
 *                                   none" when the pool's creation is not complete on it,
 *                                   else "torn: ..." and exits 1.
 */
#include <libpmemobj.h>

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define LAYOUT "rpmem-pmemobj-seq"
#define NOBJ 6
#define RING 32768

static const size_t sizes[NOBJ] = {64, 256, 1000, 4096, 8192, 16384};

struct root {
	uint64_t seq;
	PMEMoid objs[NOBJ];
};

/* What the writer publishes after each commit. */
struct state {
	volatile uint64_t committed;       /* the last transaction committed */
	volatile uint64_t started;         /* the last transaction begun */
	volatile uint64_t commit_ns[RING]; /* CLOCK_MONOTONIC of commit k at [k % RING] */
	volatile uint64_t begin_ns[RING];  /* ... and of its TX_BEGIN */
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Object i at transaction k: every 8-byte word is k ^ (i << 56) ^ word index. */
/* Present only under TSan (weak): the writes to the pool below are kept from it. librpmem's
 * asynchronous writer catches a replica up from the pool's memory while this program writes it,
 * by design (a block written meanwhile is recorded and moves again), and TSan would report
 * that as a race (as tests/support/capi_bulk.c's records). */
void AnnotateIgnoreWritesBegin(const char *file, int line) __attribute__((weak));
void AnnotateIgnoreWritesEnd(const char *file, int line) __attribute__((weak));

static void fill(uint64_t *w, size_t words, uint64_t k, uint64_t i)
{
	if (AnnotateIgnoreWritesBegin)
		AnnotateIgnoreWritesBegin(__FILE__, __LINE__);
	for (size_t j = 0; j < words; ++j)
		w[j] = k ^ (i << 56) ^ j;
	if (AnnotateIgnoreWritesEnd)
		AnnotateIgnoreWritesEnd(__FILE__, __LINE__);
}

static struct state *map_state(const char *path)
{
	int fd = open(path, O_RDWR | O_CREAT, 0600);
	if (fd < 0 || ftruncate(fd, sizeof(struct state)) != 0) {
		perror(path);
		exit(2);
	}
	void *p = mmap(NULL, sizeof(struct state), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED) {
		perror("mmap");
		exit(2);
	}
	return p;
}

/* Transaction k: k into the root and every object. */
static int transaction(PMEMobjpool *pop, PMEMoid root, uint64_t k)
{
	struct root *r = pmemobj_direct(root);
	int ret = 0;
	TX_BEGIN(pop)
	{
		pmemobj_tx_add_range(root, 0, sizeof(uint64_t));
		if (AnnotateIgnoreWritesBegin)
			AnnotateIgnoreWritesBegin(__FILE__, __LINE__);
		r->seq = k;
		if (AnnotateIgnoreWritesEnd)
			AnnotateIgnoreWritesEnd(__FILE__, __LINE__);
		for (int i = 0; i < NOBJ; ++i) {
			pmemobj_tx_add_range(r->objs[i], 0, sizes[i]);
			fill(pmemobj_direct(r->objs[i]), sizes[i] / 8, k, (uint64_t)i);
		}
	}
	TX_ONABORT
	{
		fprintf(stderr, "transaction %llu: %s\n", (unsigned long long)k,
		        pmemobj_errormsg());
		ret = 1;
	}
	TX_END
	return ret;
}

static int run(const char *poolset, const char *state_path)
{
	struct state *st = map_state(state_path);
	PMEMobjpool *pop = pmemobj_create(poolset, LAYOUT, 0, 0600);
	if (!pop) {
		fprintf(stderr, "pmemobj_create %s: %s\n", poolset, pmemobj_errormsg());
		return 2;
	}
	PMEMoid root = pmemobj_root(pop, sizeof(struct root));
	struct root *r = pmemobj_direct(root);
	TX_BEGIN(pop)
	{
		pmemobj_tx_add_range(root, 0, sizeof(struct root));
		for (int i = 0; i < NOBJ; ++i)
			r->objs[i] = pmemobj_tx_zalloc(sizes[i], 1);
	}
	TX_ONABORT
	{
		fprintf(stderr, "allocation: %s\n", pmemobj_errormsg());
		return 2;
	}
	TX_END
	printf("ready\n");
	fflush(stdout);
	for (uint64_t k = 1;; ++k) {
		st->begin_ns[k % RING] = now_ns();
		st->started = k;
		if (transaction(pop, root, k) != 0)
			return 3;
		st->commit_ns[k % RING] = now_ns();
		st->committed = k;
	}
}

static int check(const char *poolset)
{
	PMEMobjpool *pop = pmemobj_open(poolset, LAYOUT);
	if (!pop && strstr(pmemobj_errormsg(), "pool created with layout \"\"")) {
		/* The replica lags behind pmemobj_create itself: a pool whose creation did
		 * not finish, as after a crash inside pmemobj_create. */
		printf("state none: %s\n", pmemobj_errormsg());
		return 0;
	}
	if (!pop) {
		printf("pmemobj_open %s: %s\n", poolset, pmemobj_errormsg());
		return 2;
	}
	struct root *r = pmemobj_direct(pmemobj_root(pop, sizeof(struct root)));
	const uint64_t k = r->seq;
	int bad = 0;
	for (uint64_t i = 0; i < NOBJ && !bad; ++i) {
		const uint64_t *w = pmemobj_direct(r->objs[i]);
		if (!w && k == 0)
			continue; /* the replica holds no transaction yet, maybe not the allocation
			           */
		if (!w) {
			printf("torn: object %llu is not allocated at state %llu\n",
			       (unsigned long long)i, (unsigned long long)k);
			bad = 1;
			break;
		}
		for (size_t j = 0; j < sizes[i] / 8; ++j) {
			/* Before transaction 1 the objects are zero (k == 0 matches nothing). */
			const uint64_t want = k ? (k ^ (i << 56) ^ j) : 0;
			if (w[j] != want) {
				printf("torn: object %llu word %zu holds %#llx, state %llu wants "
				       "%#llx\n",
				       (unsigned long long)i, j, (unsigned long long)w[j],
				       (unsigned long long)k, (unsigned long long)want);
				bad = 1;
				break;
			}
		}
	}
	if (!bad)
		printf("state %llu\n", (unsigned long long)k);
	pmemobj_close(pop);
	return bad;
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "run") == 0)
		return run(argv[2], argv[3]);
	if (argc == 3 && strcmp(argv[1], "check") == 0)
		return check(argv[2]);
	fprintf(stderr, "usage: %s run POOLSET STATE | check POOLSET\n", argv[0]);
	return 2;
}
