# The local pool layer (lib/pmdk): PMDK's pool header and rpmem's marks on it, pure; part files
# and part sets on real files in a temporary directory. Needs only libpmem.
rpmem_add_catch_test(unit_pmdk_pool_header
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/pmdk_pool_header_test.cpp LIBS rpmem_pmdk LABELS unit)
rpmem_add_catch_test(unit_pmdk_part_set
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/pmdk_part_set_test.cpp LIBS rpmem_pmdk LABELS unit)
