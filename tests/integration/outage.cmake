# A replica's outage under stock libpmemobj through our librpmem.so.1 (client/resilient_pool):
# tests/support/pmemobj_log.c, four threads committing transactions while rpmemd is killed or
# frozen, logins refused or the link cut; the replica promoted and checked record by record.
rpmem_add_catch_test(integration_outage
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/outage_test.cpp
  LIBS rpmem_client rpmem_test_sshd rpmem_test_fault
  LABELS integration LONG)
add_executable(rpmem_pmemobj_log ${PROJECT_SOURCE_DIR}/tests/support/pmemobj_log.c)
target_link_libraries(rpmem_pmemobj_log PRIVATE PkgConfig::PMEMOBJ Threads::Threads)
add_dependencies(integration_outage rpmem rpmemd rpmem-tool rpmem_pmemobj_log)
