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
// hold-close: the same without the second persist (only close meets the loss).
// hold-fail: the same, but two threads, on lanes 0 and 1, persist until a persist fails (for
// at most 60 s), and each copies RPMEM_STATS_FILE to that name + ".at-failure.<lane>" as soon
// as its failed persist returns: what the file said when the application learnt of the
// failure, on either thread (capi_test.cpp). Prints "persist <errno>" for lane 0 and 1.
// hold-go-on: the same with one thread that persists for 2 s, then copies RPMEM_STATS_FILE to
// that name + ".after-loss" (what an application that goes on without its replica sees
// there); prints "persist <errno>" (0: every persist succeeded) and the close line.
//
// exit_open TARGET POOLSET signals: handles SIGTERM and ignores SIGINT, as an application with
// a clean shutdown may, then creates the pool (the first fabric call loads libfabric). Prints
// "<signal> kept" or "<signal> replaced by <library>" for each signal whose handler a library
// might replace, "libinfinipath loaded" if it is in the process, "SIGTERM handled" once its
// own SIGTERM reached its handler; closes the pool and calls abort().
#define _GNU_SOURCE
#include <librpmem.h>

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/** Creates the remote pool and persists its second page; NULL (the reason printed) if either
 *  fails. */
static RPMEMpool *create_and_persist(const char *target, const char *poolset, void *mem,
                                     size_t size)
{
	unsigned nlanes = 2;
	RPMEMpool *pool = rpmem_create(target, poolset, mem, size, &nlanes, NULL);
	if (!pool) {
		fprintf(stderr, "rpmem_create: %s\n", rpmem_errormsg());
		return NULL;
	}
	if (nlanes < 2) {
		fprintf(stderr, "rpmem_create granted %u lane(s), not 2\n", nlanes);
		return NULL;
	}
	if (rpmem_persist(pool, 4096, 4096, 0, 0) != 0) {
		fprintf(stderr, "rpmem_persist: %s\n", rpmem_errormsg());
		return NULL;
	}
	return pool;
}

static volatile sig_atomic_t terminated;

static void on_term(int sig)
{
	(void)sig;
	terminated = 1;
}

static int find_infinipath(struct dl_phdr_info *info, size_t size, void *found)
{
	(void)size;
	if (strstr(info->dlpi_name, "libinfinipath"))
		*(int *)found = 1;
	return 0;
}

static const int watched[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGINT, SIGTERM};
#define NWATCHED (sizeof(watched) / sizeof(watched[0]))

/** The "signals" mode (see the top): returns only if something failed. */
static int signals_mode(const char *target, const char *poolset, void *mem, size_t size)
{
	struct sigaction term = {0}, ign = {0};
	term.sa_handler = on_term;
	ign.sa_handler = SIG_IGN;
	sigaction(SIGTERM, &term, NULL);
	sigaction(SIGINT, &ign, NULL);
	struct sigaction before[NWATCHED];
	for (size_t i = 0; i < NWATCHED; ++i)
		sigaction(watched[i], NULL, &before[i]);
	RPMEMpool *pool = create_and_persist(target, poolset, mem, size);
	if (!pool)
		return 2;
	for (size_t i = 0; i < NWATCHED; ++i) {
		struct sigaction now;
		sigaction(watched[i], NULL, &now);
		if (now.sa_handler == before[i].sa_handler) {
			printf("SIG%s kept\n", sigabbrev_np(watched[i]));
			continue;
		}
		Dl_info where = {0};
		void *code;
		memcpy(&code, &now.sa_handler, sizeof(code)); // ISO C has no cast for it
		dladdr(code, &where);
		printf("SIG%s replaced by %s\n", sigabbrev_np(watched[i]),
		       where.dli_fname ? where.dli_fname : "?");
	}
	int found = 0;
	dl_iterate_phdr(find_infinipath, &found);
	if (found)
		printf("libinfinipath loaded\n");
	raise(SIGTERM);
	if (terminated)
		printf("SIGTERM handled\n");
	if (rpmem_close(pool) != 0) {
		fprintf(stderr, "rpmem_close: %s\n", rpmem_errormsg());
		return 2;
	}
	fflush(stdout);
	abort();
}

/* RPMEM_STATS_FILE as it is now, to that name + suffix. */
static void copy_metrics_file_to(const char *suffix)
{
	const char *path = getenv("RPMEM_STATS_FILE");
	if (!path)
		return;
	char to[4096];
	snprintf(to, sizeof(to), "%s%s", path, suffix);
	FILE *in = fopen(path, "r");
	FILE *out = fopen(to, "w");
	char buf[4096];
	size_t n;
	while (in && out && (n = fread(buf, 1, sizeof(buf), in)) > 0)
		fwrite(buf, 1, n, out);
	if (in)
		fclose(in);
	if (out)
		fclose(out);
}

/* ... to that name + ".at-failure.<lane>". */
static void copy_metrics_file(unsigned lane)
{
	char suffix[32];
	snprintf(suffix, sizeof(suffix), ".at-failure.%u", lane);
	copy_metrics_file_to(suffix);
}

struct failing {
	RPMEMpool *pool;
	unsigned lane;
	int err; /* errno of the persist that failed; 0: none did */
};

/* Persists a page of its own on its lane, back to back, until one fails (60 s at most). */
static void *persist_until_failure(void *arg)
{
	struct failing *f = arg;
	const size_t off = 8192 + (size_t)f->lane * 4096;
	for (int i = 0; i < 600000; ++i) {
		if (rpmem_persist(f->pool, off, 4096, f->lane, 0) != 0) {
			f->err = errno;
			copy_metrics_file(f->lane);
			return NULL;
		}
		if (i % 64 == 63)
			usleep(100);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: exit_open TARGET POOLSET "
		                "MICROSECONDS|hold|hold-close|hold-exit|signals\n");
		return 2;
	}
	const size_t size = 8 << 20;
	void *mem = aligned_alloc(4096, size);
	if (!mem)
		return 2;
	memset(mem, 0x5a, size);
	if (strcmp(argv[3], "signals") == 0)
		return signals_mode(argv[1], argv[2], mem, size);
	RPMEMpool *pool = create_and_persist(argv[1], argv[2], mem, size);
	if (!pool)
		return 2;
	const int hold_exit = strcmp(argv[3], "hold-exit") == 0;
	const int hold_close = strcmp(argv[3], "hold-close") == 0;
	const int hold_fail = strcmp(argv[3], "hold-fail") == 0;
	const int hold_go_on = strcmp(argv[3], "hold-go-on") == 0;
	if (hold_exit || hold_close || hold_fail || hold_go_on || strcmp(argv[3], "hold") == 0) {
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
	if (hold_go_on) {
		int err = 0;
		for (int i = 0; i < 2000 && !err; ++i) {
			if (rpmem_persist(pool, 8192, 4096, 0, 0) != 0)
				err = errno;
			usleep(1000);
		}
		copy_metrics_file_to(".after-loss");
		printf("persist %d\n", err);
		const int r = rpmem_close(pool);
		printf("close %d\n", r == 0 ? 0 : errno);
		free(mem);
		return 0;
	}
	if (hold_fail) {
		struct failing f[2] = {{pool, 0, 0}, {pool, 1, 0}};
		pthread_t t[2];
		for (int i = 0; i < 2; ++i)
			pthread_create(&t[i], NULL, persist_until_failure, &f[i]);
		for (int i = 0; i < 2; ++i)
			pthread_join(t[i], NULL);
		printf("persist %d %d\n", f[0].err, f[1].err);
		int r = rpmem_close(pool);
		printf("close %d\n", r == 0 ? 0 : errno);
		free(mem);
		return 0;
	}
	if (hold_close || strcmp(argv[3], "hold") == 0) {
		int r = 0;
		if (!hold_close) {
			r = rpmem_persist(pool, 8192, 4096, 0, 0);
			printf("persist %d\n", r == 0 ? 0 : errno);
		}
		r = rpmem_close(pool);
		printf("close %d\n", r == 0 ? 0 : errno);
		free(mem);
		return 0;
	}
	usleep((useconds_t)atoi(argv[3]));
	printf("exiting with the pool open\n");
	return 0;
}
