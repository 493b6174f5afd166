/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmemobj_log: stock libpmemobj, several threads appending records to logs of their own, for
 * the tests of a replica's outage (tests/integration/outage_test.cpp).
 *
 *   pmemobj_log run POOLSET HISTORY THREADS   creates the pool (with its REPLICA line), then
 *                                             each thread commits transactions 1, 2, 3, ...:
 *                                             transaction k of thread t writes record k (a
 *                                             64-byte pattern of t and k) into slot k % SLOTS
 *                                             of its log and k into its counter. After each
 *                                             commit it records k in HISTORY (a shared file
 *                                             the test reads, also after a kill) and how long
 *                                             its longest transaction took. Stops when its
 *                                             stdin ends: closes the pool, prints "closed" and
 *                                             exits 0. Any failure exits non-zero (libpmemobj
 *                                             aborts by itself when a replica fails a persist).
 *   pmemobj_log check POOLSET HISTORY         opens the pool (e.g. a promoted replica) and
 *                                             checks that every thread's counter is at least
 *                                             what HISTORY says was committed and that its last
 *                                             SLOTS records up to the counter are whole. Prints
 *                                             "ok N" (records checked) or what is wrong, exit 1.
 */
#include <libpmemobj.h>

#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define LAYOUT "rpmem-pmemobj-log"
#define MAX_THREADS 16
#define SLOTS 16384
#define WORDS 8 /* a record: 64 bytes */

struct root {
	uint64_t count[MAX_THREADS];
	PMEMoid log[MAX_THREADS]; /* SLOTS records each */
	uint64_t threads;
};

/* What the writer publishes: committed[t] after each commit; the longest transaction. */
struct history {
	volatile uint64_t committed[MAX_THREADS];
	volatile uint64_t longest_ns[MAX_THREADS];
	volatile uint64_t threads;
};

static PMEMobjpool *pop;
static PMEMoid root_oid;
static struct history *hist;
static volatile int stop;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t word(uint64_t t, uint64_t k, uint64_t i)
{
	uint64_t x = (t << 56) ^ (k << 8) ^ i ^ 0x9e3779b97f4a7c15ull;
	x ^= x >> 31;
	x *= 0xbf58476d1ce4e5b9ull;
	return x ^ (x >> 29);
}

static struct history *map_history(const char *path, int create)
{
	int fd = open(path, O_RDWR | (create ? O_CREAT : 0), 0600);
	if (fd < 0 || (create && ftruncate(fd, sizeof(struct history)) != 0)) {
		perror(path);
		exit(2);
	}
	void *p = mmap(NULL, sizeof(struct history), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED) {
		perror("mmap");
		exit(2);
	}
	return p;
}

static void *writer(void *arg)
{
	const uint64_t t = (uint64_t)(uintptr_t)arg;
	struct root *r = pmemobj_direct(root_oid);
	uint64_t *log = pmemobj_direct(r->log[t]);
	for (uint64_t k = 1; !stop; ++k) {
		uint64_t *rec = log + (k % SLOTS) * WORDS;
		const uint64_t begin = now_ns();
		int failed = 0;
		TX_BEGIN(pop)
		{
			pmemobj_tx_add_range_direct(rec, WORDS * 8);
			for (uint64_t i = 0; i < WORDS; ++i)
				rec[i] = word(t, k, i);
			pmemobj_tx_add_range_direct(&r->count[t], 8);
			r->count[t] = k;
		}
		TX_ONABORT
		{
			fprintf(stderr, "thread %llu transaction %llu: %s\n", (unsigned long long)t,
			        (unsigned long long)k, pmemobj_errormsg());
			failed = 1;
		}
		TX_END
		if (failed)
			exit(3);
		const uint64_t took = now_ns() - begin;
		if (took > hist->longest_ns[t])
			hist->longest_ns[t] = took;
		hist->committed[t] = k;
	}
	return NULL;
}

static int run(const char *poolset, const char *history, int threads)
{
	if (threads < 1 || threads > MAX_THREADS) {
		fprintf(stderr, "threads: 1..%d\n", MAX_THREADS);
		return 2;
	}
	hist = map_history(history, 1);
	hist->threads = (uint64_t)threads;
	pop = pmemobj_create(poolset, LAYOUT, 0, 0600);
	if (!pop) {
		fprintf(stderr, "pmemobj_create %s: %s\n", poolset, pmemobj_errormsg());
		return 2;
	}
	root_oid = pmemobj_root(pop, sizeof(struct root));
	struct root *r = pmemobj_direct(root_oid);
	TX_BEGIN(pop)
	{
		pmemobj_tx_add_range(root_oid, 0, sizeof(struct root));
		r->threads = (uint64_t)threads;
		for (int t = 0; t < threads; ++t)
			r->log[t] = pmemobj_tx_zalloc(SLOTS * WORDS * 8, 1);
	}
	TX_ONABORT
	{
		fprintf(stderr, "allocation: %s\n", pmemobj_errormsg());
		return 2;
	}
	TX_END
	printf("ready\n");
	fflush(stdout);
	pthread_t tid[MAX_THREADS];
	for (int t = 0; t < threads; ++t)
		pthread_create(&tid[t], NULL, writer, (void *)(uintptr_t)t);
	char c;
	while (read(0, &c, 1) > 0)
		;
	stop = 1;
	for (int t = 0; t < threads; ++t)
		pthread_join(tid[t], NULL);
	pmemobj_close(pop);
	printf("closed\n");
	fflush(stdout);
	return 0;
}

static int check(const char *poolset, const char *history)
{
	struct history *h = map_history(history, 0);
	PMEMobjpool *p = pmemobj_open(poolset, LAYOUT);
	if (!p) {
		printf("pmemobj_open %s: %s\n", poolset, pmemobj_errormsg());
		return 2;
	}
	struct root *r = pmemobj_direct(pmemobj_root(p, sizeof(struct root)));
	uint64_t checked = 0;
	int bad = 0;
	for (uint64_t t = 0; t < h->threads && !bad; ++t) {
		const uint64_t acked = h->committed[t], holds = r->count[t];
		if (holds < acked) {
			printf("thread %llu: %llu records acknowledged, the pool holds %llu\n",
			       (unsigned long long)t, (unsigned long long)acked,
			       (unsigned long long)holds);
			bad = 1;
			break;
		}
		const uint64_t *log = pmemobj_direct(r->log[t]);
		for (uint64_t k = holds > SLOTS ? holds - SLOTS + 1 : 1; k <= holds && !bad; ++k) {
			const uint64_t *rec = log + (k % SLOTS) * WORDS;
			for (uint64_t i = 0; i < WORDS; ++i)
				if (rec[i] != word(t, k, i)) {
					printf("thread %llu record %llu word %llu is %#llx, not "
					       "%#llx\n",
					       (unsigned long long)t, (unsigned long long)k,
					       (unsigned long long)i, (unsigned long long)rec[i],
					       (unsigned long long)word(t, k, i));
					bad = 1;
					break;
				}
			++checked;
		}
	}
	if (!bad)
		printf("ok %llu\n", (unsigned long long)checked);
	pmemobj_close(p);
	return bad;
}

int main(int argc, char **argv)
{
	if (argc == 5 && strcmp(argv[1], "run") == 0)
		return run(argv[2], argv[3], atoi(argv[4]));
	if (argc == 4 && strcmp(argv[1], "check") == 0)
		return check(argv[2], argv[3]);
	fprintf(stderr, "usage: %s run POOLSET HISTORY THREADS | check POOLSET HISTORY\n", argv[0]);
	return 2;
}
