# Faults (issue 6): killed daemons and clients, keep-alive, a link cut between network
# namespaces, start-up errors, a full replica; attacks on the fabric and control channels.
rpmem_add_catch_test(integration_fault
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/fault_test.cpp
  LIBS rpmem_client rpmem_test_sshd rpmem_test_fault
  LABELS integration)
add_dependencies(integration_fault rpmemd rpmem_fault_client)
rpmem_add_catch_test(integration_attack
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/attack_test.cpp
  LIBS rpmem_client rpmem_test_sshd rpmem_test_fault
  LABELS integration)
add_dependencies(integration_attack rpmemd)
