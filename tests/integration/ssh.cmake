# ssh part against a private sshd on loopback (tests/support/sshd.*); no libfabric.
rpmem_add_catch_test(integration_ssh
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/ssh_test.cpp
  LIBS rpmem_ssh rpmem_test_sshd
  LABELS integration)
