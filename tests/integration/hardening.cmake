# Hardening and PMDK parity (issue 13): how start-up, storage and removal failures read, PMDK's
# texts and behaviours, through the real sshd and rpmemd.
rpmem_add_catch_test(integration_hardening
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/hardening_test.cpp
  LIBS rpmem_client rpmem_test_sshd
  LABELS integration)
add_dependencies(integration_hardening rpmemd)
