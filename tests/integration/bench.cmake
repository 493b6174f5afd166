# Smoke run of rpmem-bench (and its floor peer rpmem-floor) through the private sshd: every
# scenario once with tiny counts; rows and positive ratios are checked, never times.
rpmem_add_catch_test(integration_bench
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/bench_test.cpp
  LIBS rpmem_client rpmem_test_sshd
  LABELS integration)
add_dependencies(integration_bench rpmem-bench rpmem-floor rpmemd rpmem)
