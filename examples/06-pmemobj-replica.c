/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * 06-pmemobj-replica: stock libpmemobj with a REPLICA line. Nothing here knows about rpmem:
 * the pool set file names a remote replica, and libpmemobj loads librpmem.so.1 by itself.
 *
 *   pool.set:   PMEMPOOLSET
 *               64M /path/local.part
 *               REPLICA user@host remote.set
 *
 *   06-pmemobj-replica create pool.set    -- creates the pool, 4 threads run transactions
 *   06-pmemobj-replica verify pool.set    -- reopens it and checks every record
 */
#include <libpmemobj.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LAYOUT "rpmem-example-06"
#define THREADS 4
#define RECORDS 200

struct record {
	uint64_t thread;
	uint64_t index;
	uint64_t check;
	char text[40];
};

struct root {
	PMEMoid lists[THREADS][RECORDS]; /* each slot: a struct record */
	uint64_t committed[THREADS];
};

static uint64_t checksum(uint64_t t, uint64_t i)
{
	return (t + 1) * 1000003u ^ (i * 7919u);
}

static PMEMobjpool *pop;

static void *writer(void *arg)
{
	uint64_t t = (uint64_t)(uintptr_t)arg;
	PMEMoid root = pmemobj_root(pop, sizeof(struct root));
	struct root *r = pmemobj_direct(root);
	for (uint64_t i = 0; i < RECORDS; ++i) {
		TX_BEGIN(pop)
		{
			PMEMoid oid = pmemobj_tx_alloc(sizeof(struct record), 1);
			struct record *rec = pmemobj_direct(oid);
			rec->thread = t;
			rec->index = i;
			rec->check = checksum(t, i);
			snprintf(rec->text, sizeof(rec->text), "thread %lu record %lu",
			         (unsigned long)t, (unsigned long)i);
			pmemobj_tx_add_range_direct(&r->lists[t][i], sizeof(PMEMoid));
			r->lists[t][i] = oid;
			pmemobj_tx_add_range_direct(&r->committed[t], sizeof(uint64_t));
			r->committed[t] = i + 1;
		}
		TX_ONABORT
		{
			fprintf(stderr, "transaction aborted: %s\n", pmemobj_errormsg());
			exit(1);
		}
		TX_END
	}
	return NULL;
}

static int verify(void)
{
	struct root *r = pmemobj_direct(pmemobj_root(pop, sizeof(struct root)));
	unsigned bad = 0;
	for (uint64_t t = 0; t < THREADS; ++t) {
		if (r->committed[t] != RECORDS)
			++bad;
		for (uint64_t i = 0; i < RECORDS; ++i) {
			struct record *rec = pmemobj_direct(r->lists[t][i]);
			if (!rec || rec->thread != t || rec->index != i ||
			    rec->check != checksum(t, i))
				++bad;
		}
	}
	printf("verified %d records: %u bad\n", THREADS * RECORDS, bad);
	return bad ? 1 : 0;
}

int main(int argc, char *argv[])
{
	if (argc < 3 || (strcmp(argv[1], "create") && strcmp(argv[1], "verify"))) {
		fprintf(stderr, "usage: %s create|verify pool.set\n", argv[0]);
		return 2;
	}
	if (strcmp(argv[1], "create") == 0) {
		pop = pmemobj_create(argv[2], LAYOUT, 0, 0600);
		if (!pop) {
			fprintf(stderr, "pmemobj_create %s: %s\n", argv[2], pmemobj_errormsg());
			return 1;
		}
		pthread_t th[THREADS];
		for (uintptr_t t = 0; t < THREADS; ++t)
			pthread_create(&th[t], NULL, writer, (void *)t);
		for (int t = 0; t < THREADS; ++t)
			pthread_join(th[t], NULL);
		printf("created %s: %d threads wrote %d records in transactions\n", argv[2],
		       THREADS, THREADS * RECORDS);
		int ret = verify();
		pmemobj_close(pop);
		return ret;
	}
	pop = pmemobj_open(argv[2], LAYOUT);
	if (!pop) {
		fprintf(stderr, "pmemobj_open %s: %s\n", argv[2], pmemobj_errormsg());
		return 1;
	}
	int ret = verify();
	pmemobj_close(pop);
	return ret;
}
