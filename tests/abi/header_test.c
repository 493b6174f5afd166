/* SPDX-License-Identifier: BSD-3-Clause */
/* librpmem.h against PMDK 1.12.1's values: constants, struct size and every field offset. */
#include <librpmem.h>

#include <stddef.h>
#include <stdio.h>

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "FAIL: %s\n", #cond);                                      \
			++failures;                                                                \
		}                                                                                  \
	} while (0)

int main(void)
{
	int failures = 0;
	CHECK(RPMEM_POOL_HDR_SIG_LEN == 8);
	CHECK(RPMEM_POOL_HDR_UUID_LEN == 16);
	CHECK(RPMEM_POOL_USER_FLAGS_LEN == 16);
	CHECK(RPMEM_PERSIST_RELAXED == 1U);
	CHECK(RPMEM_FLUSH_RELAXED == 1U);
	CHECK(RPMEM_REMOVE_FORCE == 0x1);
	CHECK(RPMEM_REMOVE_POOL_SET == 0x2);
	CHECK(RPMEM_MAJOR_VERSION == 1);
	CHECK(RPMEM_MINOR_VERSION == 3);
	CHECK(RPMEM_MIN_POOL == 8192);
	CHECK(RPMEM_MIN_PART == 2097152);
	CHECK(sizeof(struct rpmem_pool_attr) == 104);
	CHECK(_Alignof(struct rpmem_pool_attr) == 4);
	CHECK(offsetof(struct rpmem_pool_attr, signature) == 0);
	CHECK(offsetof(struct rpmem_pool_attr, major) == 8);
	CHECK(offsetof(struct rpmem_pool_attr, compat_features) == 12);
	CHECK(offsetof(struct rpmem_pool_attr, incompat_features) == 16);
	CHECK(offsetof(struct rpmem_pool_attr, ro_compat_features) == 20);
	CHECK(offsetof(struct rpmem_pool_attr, poolset_uuid) == 24);
	CHECK(offsetof(struct rpmem_pool_attr, uuid) == 40);
	CHECK(offsetof(struct rpmem_pool_attr, next_uuid) == 56);
	CHECK(offsetof(struct rpmem_pool_attr, prev_uuid) == 72);
	CHECK(offsetof(struct rpmem_pool_attr, user_flags) == 88);
	/* Version checks: NULL when satisfied, a message otherwise. */
	CHECK(rpmem_check_version(1, 0) == NULL);
	CHECK(rpmem_check_version(1, 3) == NULL);
	CHECK(rpmem_check_version(1, 4) != NULL);
	CHECK(rpmem_check_version(2, 0) != NULL);
	CHECK(rpmem_errormsg()[0] != '\0'); /* the last check left its message */
	printf("%s\n", failures ? "FAILED" : "OK: header matches PMDK 1.12.1");
	return failures ? 1 : 0;
}
