/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * librpmem.h -- remote persistent memory: the C interface of librpmem.so.1.
 *
 * Drop-in compatible with PMDK's librpmem 1.12 (API version 1.3): the same functions, types,
 * struct layouts, constants, errno conventions and environment variables, so programs and
 * libraries built for PMDK's librpmem (libpmemobj, libpmempool) work unchanged.
 *
 * A pool is a range of local memory [pool_addr, pool_addr + pool_size) replicated to a pool
 * set on a remote node, where rpmemd is started over SSH. rpmem_persist() returns when a range
 * is persistent on the remote node. Every function returns NULL or -1 on failure, sets errno and
 * a message for rpmem_errormsg(). See librpmem(7) and the man pages in docs/.
 */
#ifndef LIBRPMEM_H
#define LIBRPMEM_H 1

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rpmem_pool RPMEMpool;

#define RPMEM_POOL_HDR_SIG_LEN 8
#define RPMEM_POOL_HDR_UUID_LEN 16 /* uuid byte length */
#define RPMEM_POOL_USER_FLAGS_LEN 16

/* Attributes stored in the remote pool's header (104 bytes, no padding). */
struct rpmem_pool_attr {
	char signature[RPMEM_POOL_HDR_SIG_LEN];              /* pool signature */
	uint32_t major;                                      /* format major version number */
	uint32_t compat_features;                            /* mask: compatible "may" features */
	uint32_t incompat_features;                          /* mask: "must support" features */
	uint32_t ro_compat_features;                         /* mask: force RO if unsupported */
	unsigned char poolset_uuid[RPMEM_POOL_HDR_UUID_LEN]; /* pool uuid */
	unsigned char uuid[RPMEM_POOL_HDR_UUID_LEN];         /* first part uuid */
	unsigned char next_uuid[RPMEM_POOL_HDR_UUID_LEN];    /* next pool uuid */
	unsigned char prev_uuid[RPMEM_POOL_HDR_UUID_LEN];    /* prev pool uuid */
	unsigned char user_flags[RPMEM_POOL_USER_FLAGS_LEN]; /* user flags */
};

/*
 * Creates the pool set pool_set_name on target ([user@]host[:port]) and connects lanes for
 * [pool_addr, pool_addr + pool_size) (page aligned). *nlanes: lanes wanted in, granted out.
 * create_attr NULL or all zeros: a pool without headers (remote pool set: OPTION NOHDRS).
 */
RPMEMpool *rpmem_create(const char *target, const char *pool_set_name, void *pool_addr,
                        size_t pool_size, unsigned *nlanes,
                        const struct rpmem_pool_attr *create_attr);

/* Opens an existing remote pool set; *open_attr (if not NULL) receives its attributes. */
RPMEMpool *rpmem_open(const char *target, const char *pool_set_name, void *pool_addr,
                      size_t pool_size, unsigned *nlanes, struct rpmem_pool_attr *open_attr);

/* Overwrites the remote pool's attributes. */
int rpmem_set_attr(RPMEMpool *rpp, const struct rpmem_pool_attr *attr);

/* Disconnects, tells rpmemd to close the pool and frees the handle (always). */
int rpmem_close(RPMEMpool *rpp);

#define RPMEM_PERSIST_RELAXED (1U << 0)
#define RPMEM_FLUSH_RELAXED (1U << 0)

/* Starts replicating [offset, offset + length); RPMEM_FLUSH_RELAXED defers durability to
 * rpmem_drain() on the same lane. */
int rpmem_flush(RPMEMpool *rpp, size_t offset, size_t length, unsigned lane, unsigned flags);
/* Makes everything flushed on lane persistent on the remote node: one round trip. */
int rpmem_drain(RPMEMpool *rpp, unsigned lane, unsigned flags);

/* Returns when [offset, offset + length) is persistent on the remote node. An aligned 8-byte
 * store is never torn on the replica. RPMEM_PERSIST_RELAXED (PMDK: the persist may tear them)
 * is accepted and changes nothing: a relaxed persist is made exactly as any other. */
int rpmem_persist(RPMEMpool *rpp, size_t offset, size_t length, unsigned lane, unsigned flags);
/* Reads [offset, offset + length) of the remote pool into buff. */
int rpmem_read(RPMEMpool *rpp, void *buff, size_t offset, size_t length, unsigned lane);
/* Like rpmem_persist, and flushes down to the media on the remote node (msync). */
int rpmem_deep_persist(RPMEMpool *rpp, size_t offset, size_t length, unsigned lane);

#define RPMEM_REMOVE_FORCE 0x1
#define RPMEM_REMOVE_POOL_SET 0x2

/* Removes the remote pool set's parts (and the pool set file with RPMEM_REMOVE_POOL_SET). */
int rpmem_remove(const char *target, const char *pool_set, int flags);

/*
 * Checks the library's API version: NULL when compatible, else a message (do not free).
 */
#define RPMEM_MAJOR_VERSION 1
#define RPMEM_MINOR_VERSION 3
const char *rpmem_check_version(unsigned major_required, unsigned minor_required);

/* The calling thread's message about its last failure ("" when none). */
const char *rpmem_errormsg(void);

/* Minimum pool size: 8 KiB. */
#define RPMEM_MIN_POOL ((size_t)(1024 * 8))

/* Minimum size of a part of a remote pool set: 2 MiB. */
#define RPMEM_MIN_PART ((size_t)(1024 * 1024 * 2))

#ifdef __cplusplus
}
#endif
#endif /* librpmem.h */
