# lib/fabric against the real tcp and sockets providers on loopback.
rpmem_add_catch_test(integration_fabric
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/fabric_test.cpp
  LIBS rpmem_fabric
  LABELS integration)
