# rpmem top (tools/rpmem/top.cpp) against a pool stock libpmemobj writes through our
# librpmem.so.1, the private sshd and the real rpmemd: in a detached tmux session while the
# replica is lost and caught up, and as plain snapshots without a terminal.
rpmem_add_catch_test(integration_top
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/top_test.cpp
  LIBS rpmem_client rpmem_test_sshd rpmem_test_fault
  LABELS integration)
add_dependencies(integration_top rpmem rpmemd rpmem-tool rpmem_pmemobj_log)
