# The C ABI's online catch-up, interrupted (rpmemd killed while it moves) while the calls persist
# to the replica catching up: tests/support/capi_bulk.c, our own C program (TSan sees all of its
# threads, unlike libpmemobj's in integration_outage).
rpmem_add_catch_test(integration_catch_up
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/catch_up_test.cpp
  LIBS rpmem_client rpmem_test_sshd rpmem_test_fault
  LABELS integration)
add_executable(rpmem_capi_bulk ${PROJECT_SOURCE_DIR}/tests/support/capi_bulk.c)
target_link_libraries(rpmem_capi_bulk PRIVATE rpmem Threads::Threads)
add_dependencies(integration_catch_up rpmem rpmemd rpmem_capi_bulk)
