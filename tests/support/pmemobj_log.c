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
 *   pmemobj_log resume POOLSET HISTORY THREADS
 *                                             opens the pool a killed writer left (libpmemobj
 *                                             recovers it), checks that every thread's counter
 *                                             is at least what HISTORY says was committed, then
 *                                             goes on as run from there (tests/chaos).
 *   pmemobj_log check POOLSET HISTORY         opens the pool (e.g. a promoted replica) and
 *                                             checks that every thread's counter is at least
 *                                             what HISTORY says was committed and that its last
 *                                             SLOTS records up to the counter are whole. Prints
 *                                             "ok N" (records checked) or what is wrong, exit 1.
 *   pmemobj_log check-consistent POOLSET HISTORY
 *                                             the same, but a counter below HISTORY's is no
 *                                             failure (a replica promoted with --force may lack
 *                                             the last ones): prints "ok N" and then
 *                                             "holds C0 C1 ..." (each thread's counter).
 *
 * HISTORY also says where the records are (root_off, log_off: pool offsets, which are a
 * replica part's file offsets too), which transaction each thread has in progress since when
 * (call_start_ns, CLOCK_MONOTONIC, 0: none) and whether the writer runs (phase), so that
 * tests/chaos reads replicas directly while the writer goes on; and, for each thread's last
 * TX_RING transactions, when each began and how long it took (bench/tx_sampler.py).
 * PMEMOBJ_LOG_PACE_US: each thread sleeps that many microseconds after each transaction
 * (default 0).
 */
#include <libpmemobj.h>

#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
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
#define TX_RING 8192

struct root {
	uint64_t count[MAX_THREADS];
	PMEMoid log[MAX_THREADS]; /* SLOTS records each */
	uint64_t threads;
};

/* What the writer publishes: committed[t] after each commit; the longest transaction; where
 * the records are; the transaction in progress. */
struct history {
	volatile uint64_t committed[MAX_THREADS];
	volatile uint64_t longest_ns[MAX_THREADS];
	volatile uint64_t threads;
	volatile uint64_t root_off;
	volatile uint64_t log_off[MAX_THREADS];
	volatile uint64_t slots;
	volatile uint64_t call_start_ns[MAX_THREADS];
	volatile uint64_t phase;   /* 0 starting, 1 running, 2 closing, 3 closed */
	volatile uint64_t tx_ring; /* TX_RING */
	/* Transaction k of thread t at [t][k % TX_RING]: its begin (CLOCK_MONOTONIC) and how
	 * long it took, written after its commit (took first). */
	volatile uint64_t tx_begin_ns[MAX_THREADS][TX_RING];
	volatile uint64_t tx_took_ns[MAX_THREADS][TX_RING];
};

static PMEMobjpool *pop;
static PMEMoid root_oid;
static struct history *hist;
static atomic_int stop;             /* set by the main thread when stdin ends */
static uint64_t first[MAX_THREADS]; /* the first transaction of each thread */
static useconds_t pace_us;

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
	for (uint64_t k = first[t]; !atomic_load_explicit(&stop, memory_order_relaxed); ++k) {
		uint64_t *rec = log + (k % SLOTS) * WORDS;
		const uint64_t begin = now_ns();
		hist->call_start_ns[t] = begin;
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
		hist->call_start_ns[t] = 0;
		hist->tx_took_ns[t][k % TX_RING] = took;
		hist->tx_begin_ns[t][k % TX_RING] = begin;
		if (took > hist->longest_ns[t])
			hist->longest_ns[t] = took;
		hist->committed[t] = k;
		if (pace_us)
			usleep(pace_us);
	}
	return NULL;
}

static void publish_layout(int threads)
{
	struct root *r = pmemobj_direct(root_oid);
	hist->root_off = root_oid.off;
	for (int t = 0; t < threads; ++t)
		hist->log_off[t] = r->log[t].off;
	hist->slots = SLOTS;
	hist->tx_ring = TX_RING;
}

/* The writers, until stdin ends; then the pool is closed. */
static int write_until_eof(int threads)
{
	const char *pace = getenv("PMEMOBJ_LOG_PACE_US");
	pace_us = pace ? (useconds_t)strtoul(pace, NULL, 10) : 0;
	hist->phase = 1;
	printf("ready\n");
	fflush(stdout);
	pthread_t tid[MAX_THREADS];
	for (int t = 0; t < threads; ++t)
		pthread_create(&tid[t], NULL, writer, (void *)(uintptr_t)t);
	char c;
	while (read(0, &c, 1) > 0)
		;
	atomic_store_explicit(&stop, 1, memory_order_relaxed);
	for (int t = 0; t < threads; ++t)
		pthread_join(tid[t], NULL);
	hist->phase = 2;
	pmemobj_close(pop);
	hist->phase = 3;
	printf("closed\n");
	fflush(stdout);
	return 0;
}

static int resume(const char *poolset, const char *history, int threads)
{
	hist = map_history(history, 0);
	if (threads < 1 || (uint64_t)threads != hist->threads) {
		fprintf(stderr, "threads: %llu, as the history says\n",
		        (unsigned long long)hist->threads);
		return 2;
	}
	hist->phase = 0;
	pop = pmemobj_open(poolset, LAYOUT);
	if (!pop) {
		fprintf(stderr, "pmemobj_open %s: %s\n", poolset, pmemobj_errormsg());
		return 2;
	}
	root_oid = pmemobj_root(pop, sizeof(struct root));
	struct root *r = pmemobj_direct(root_oid);
	for (int t = 0; t < threads; ++t) {
		if (r->count[t] < hist->committed[t]) {
			fprintf(stderr,
			        "thread %d: %llu records acknowledged, the master holds %llu\n", t,
			        (unsigned long long)hist->committed[t],
			        (unsigned long long)r->count[t]);
			return 4;
		}
		first[t] = r->count[t] + 1;
	}
	publish_layout(threads);
	return write_until_eof(threads);
}

static int run(const char *poolset, const char *history, int threads)
{
	if (threads < 1 || threads > MAX_THREADS) {
		fprintf(stderr, "threads: 1..%d\n", MAX_THREADS);
		return 2;
	}
	hist = map_history(history, 1);
	hist->threads = (uint64_t)threads;
	for (int t = 0; t < threads; ++t)
		first[t] = 1;
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
	publish_layout(threads);
	return write_until_eof(threads);
}

static int check(const char *poolset, const char *history, int consistent_only)
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
		if (holds < acked && !consistent_only) {
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
	if (!bad && consistent_only) {
		printf("holds");
		for (uint64_t t = 0; t < h->threads; ++t)
			printf(" %llu", (unsigned long long)r->count[t]);
		printf("\n");
	}
	pmemobj_close(p);
	return bad;
}

int main(int argc, char **argv)
{
	if (argc == 5 && strcmp(argv[1], "run") == 0)
		return run(argv[2], argv[3], atoi(argv[4]));
	if (argc == 5 && strcmp(argv[1], "resume") == 0)
		return resume(argv[2], argv[3], atoi(argv[4]));
	if (argc == 4 && strcmp(argv[1], "check") == 0)
		return check(argv[2], argv[3], 0);
	if (argc == 4 && strcmp(argv[1], "check-consistent") == 0)
		return check(argv[2], argv[3], 1);
	fprintf(stderr,
	        "usage: %s run|resume POOLSET HISTORY THREADS | check|check-consistent POOLSET "
	        "HISTORY\n",
	        argv[0]);
	return 2;
}
