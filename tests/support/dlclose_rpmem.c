/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Loads librpmem.so.1 the way libpmemobj and libpmempool do (dlopen), lets a create fail at
 * once, and dlcloses the library right after, as PMDK's util_remote_unload does after every
 * pool set. The failed create has started loading libfabric on a thread of librpmem's
 * (lib/fabric/library.cpp, load_ahead); that thread, and the exit and fork handlers it
 * registered, must outlive the dlclose: librpmem is linked -z nodelete.
 *
 *   rpmem_dlclose LIBRPMEM_PATH TARGET     (TARGET: where nothing listens)
 * stdout: "nodelete" or "deletable" (librpmem's DF_1_NODELETE flag), "create failed", then
 * "still loaded" or "unloaded"; exit 0 only for "still loaded", after waiting for the thread to
 * finish.
 */
#define _GNU_SOURCE
#include "librpmem.h"

#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef RPMEMpool *(*create_fn)(const char *, const char *, void *, size_t, unsigned *,
                                const struct rpmem_pool_attr *);

int main(int argc, char *argv[])
{
	if (argc != 3) {
		fprintf(stderr, "usage: %s LIBRPMEM_PATH TARGET\n", argv[0]);
		return 2;
	}
	void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		fprintf(stderr, "dlopen %s: %s\n", argv[1], dlerror());
		return 2;
	}
	struct link_map *map = NULL;
	int nodelete = 0;
	if (dlinfo(lib, RTLD_DI_LINKMAP, &map) == 0 && map)
		for (const ElfW(Dyn) *d = map->l_ld; d->d_tag != DT_NULL; ++d)
			if (d->d_tag == DT_FLAGS_1 && (d->d_un.d_val & DF_1_NODELETE))
				nodelete = 1;
	printf("%s\n", nodelete ? "nodelete" : "deletable");
	create_fn create;
	void *sym = dlsym(lib, "rpmem_create");
	if (!sym) {
		fprintf(stderr, "no rpmem_create: %s\n", dlerror());
		return 2;
	}
	memcpy(&create, &sym, sizeof(create)); /* ISO C: no object-to-function pointer cast */
	const size_t size = 8u << 20;
	void *pool = aligned_alloc(4096, size);
	if (!pool)
		return 2;
	unsigned nlanes = 1;
	struct rpmem_pool_attr attr;
	memset(&attr, 0, sizeof(attr));
	memcpy(attr.signature, "DLCLOSE", 7);
	RPMEMpool *rpp = create(argv[2], "pool.set", pool, size, &nlanes, &attr);
	if (rpp) {
		fprintf(stderr, "rpmem_create on %s succeeded: expected nothing to listen there\n",
		        argv[2]);
		return 2;
	}
	printf("create failed\n");
	fflush(stdout);
	dlclose(lib);
	void *again = dlopen(argv[1], RTLD_NOW | RTLD_NOLOAD);
	printf("%s\n", again ? "still loaded" : "unloaded");
	fflush(stdout);
	sleep(1); /* the loading thread finishes meanwhile: it must not crash */
	free(pool);
	return again ? 0 : 1;
}
