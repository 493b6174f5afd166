/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * capi_bulk: our librpmem's C ABI with a catch-up long enough to interrupt, for
 * tests/integration/outage_test.cpp. Creates a remote pool of SIZE bytes (with attributes, so
 * it has a header and is marked possibly behind while open), then a thread persists 64-byte
 * records round and round through the pool's last MiB on lane 0 (the lane a catch-up's moves
 * share; the blocks a catch-up moves last), while the main thread takes commands from stdin,
 * one per line:
 *
 *   fill N   writes byte N over [4 KiB, SIZE - 1 MiB) (after the header, before the records)
 *            and persists it 1 MiB at a time on lane 1; prints "filled"
 *   lap      prints "records <n> longest_us <us>": the thread's persists and the longest
 *            one since the last lap (or the start)
 *   close    stops the thread, prints a lap, closes the pool and prints "closed <rc>
 *            <errno>", writes the pool's bytes (the master) to DUMP, prints "dumped" and
 *            exits 0
 *
 * Prints "ready <nlanes>" once the pool is created. A failed call prints
 * "error <call> <errno> <message>" and exits 1: under RPMEM_ON_OUTAGE=continue none may fail.
 *
 *   capi_bulk TARGET DESCRIPTOR SIZE DUMP
 */
#include <rpmem/librpmem.h>

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MIB ((size_t)1 << 20)
#define HEADER 4096

static RPMEMpool *pool;
static unsigned char *base;
static atomic_int stop;

static void fail(const char *call)
{
	printf("error %s %d %s\n", call, errno, rpmem_errormsg());
	fflush(stdout);
	exit(1);
}

static size_t size;

/*
 * A catch-up reads the master's blocks while the application writes them, by design: a block
 * written during its move is marked and moved again (lib/client/catch_up_window.hpp). TSan
 * sees the move's read (sendmsg in libfabric, on the catch-up's thread) race with a record's
 * bytes written here. That race, and only it, is kept from TSan: the records thread's writes
 * are not recorded (TSan's ignore annotations, present only in a TSan build), and, should one
 * be, a report with a write_record frame is suppressed. A race of the library's own state
 * still shows: neither covers its accesses. (The suppression alone was not enough: a record
 * written long before the move read it had lost its stack, "failed to restore the stack".)
 */
const char *__tsan_default_suppressions(void);
const char *__tsan_default_suppressions(void)
{
	return "race:write_record\n";
}
void AnnotateIgnoreWritesBegin(const char *file, int line) __attribute__((weak));
void AnnotateIgnoreWritesEnd(const char *file, int line) __attribute__((weak));

__attribute__((noinline)) static void write_record(size_t off, uint64_t k)
{
	if (AnnotateIgnoreWritesBegin)
		AnnotateIgnoreWritesBegin(__FILE__, __LINE__);
	memset(base + off, (int)(k % 251) + 1, 64);
	memcpy(base + off, &k, sizeof(k));
	if (AnnotateIgnoreWritesEnd)
		AnnotateIgnoreWritesEnd(__FILE__, __LINE__);
}

static atomic_ullong records_done, longest_ns; /* since the last lap */

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *records(void *arg)
{
	(void)arg;
	uint64_t k = 0;
	while (!atomic_load(&stop)) {
		const size_t off = size - MIB + (k * 64) % MIB;
		write_record(off, k);
		const uint64_t t0 = now_ns();
		if (rpmem_persist(pool, off, 64, 0, 0))
			fail("rpmem_persist (records)");
		const unsigned long long took = now_ns() - t0;
		unsigned long long was = atomic_load(&longest_ns);
		while (took > was && !atomic_compare_exchange_weak(&longest_ns, &was, took))
			;
		atomic_fetch_add(&records_done, 1);
		++k;
	}
	return NULL;
}

static void lap(void)
{
	const unsigned long long n = atomic_exchange(&records_done, 0);
	printf("records %llu longest_us %llu\n", n, atomic_exchange(&longest_ns, 0) / 1000);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: %s TARGET DESCRIPTOR SIZE DUMP\n", argv[0]);
		return 2;
	}
	size = strtoull(argv[3], NULL, 0);
	if (size < 4 * MIB)
		return 2;
	if (posix_memalign((void **)&base, 4096, size))
		return 2;
	memset(base, 0, size);
	struct rpmem_pool_attr attr;
	memset(&attr, 0, sizeof(attr));
	memcpy(attr.signature, "CAPIBULK", 8);
	attr.major = 1;
	memset(attr.poolset_uuid, 1, sizeof(attr.poolset_uuid));
	memset(attr.uuid, 2, sizeof(attr.uuid));
	unsigned nlanes = 4;
	pool = rpmem_create(argv[1], argv[2], base, size, &nlanes, &attr);
	if (!pool)
		fail("rpmem_create");
	if (nlanes < 2) {
		printf("error rpmem_create 0 only %u lane(s) granted\n", nlanes);
		return 1;
	}
	printf("ready %u\n", nlanes);
	fflush(stdout);
	pthread_t t;
	if (pthread_create(&t, NULL, records, NULL))
		return 2;
	char line[128];
	while (fgets(line, sizeof(line), stdin)) {
		unsigned n;
		if (sscanf(line, "fill %u", &n) == 1) {
			for (size_t off = HEADER; off < size - MIB; off += MIB) {
				const size_t len = size - MIB - off < MIB ? size - MIB - off : MIB;
				memset(base + off, (int)n, len);
				if (rpmem_persist(pool, off, len, 1, 0))
					fail("rpmem_persist (fill)");
			}
			printf("filled\n");
			fflush(stdout);
		} else if (strncmp(line, "lap", 3) == 0) {
			lap();
		} else if (strncmp(line, "close", 5) == 0) {
			break;
		}
	}
	atomic_store(&stop, 1);
	pthread_join(t, NULL);
	lap();
	const int rc = rpmem_close(pool);
	printf("closed %d %d\n", rc, rc ? errno : 0);
	fflush(stdout);
	FILE *f = fopen(argv[4], "wb");
	if (!f || fwrite(base, 1, size, f) != size || fclose(f))
		return 2;
	printf("dumped\n");
	fflush(stdout);
	free(base);
	return 0;
}
