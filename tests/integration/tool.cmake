# The rpmem command-line tool (tools/rpmem): every command through the private sshd and the
# real rpmemd; stock libpmemobj (examples/06) writes the pools verify, sync and promote use.
rpmem_add_catch_test(integration_tool
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/tool_test.cpp
  LIBS rpmem_client rpmem_pmdk rpmem_test_sshd rpmem_test_fault
  LABELS integration LONG)
add_dependencies(integration_tool rpmem-tool rpmem-bench rpmem rpmemd 06-pmemobj-replica)
