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
# Durability and liveness again under the commit method (FI_COMMIT_COMPLETE writes), APM
# (RDMA write + read) and the hardware registration mode (FI_MR_BASIC) on tcp and sockets.
rpmem_add_catch_variant(integration_fault commit "[kill],[timeout]")
rpmem_add_catch_variant(integration_fault apm "[kill]")
rpmem_add_catch_variant(integration_fault basic "[kill]")
rpmem_add_catch_variant(integration_fault sockets-basic "[kill]")
