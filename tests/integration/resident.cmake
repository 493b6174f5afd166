# The resident rpmemd (daemon/resident.hpp): sessions handed to spare processes that loaded
# libfabric ahead, through the private sshd; what a killed session, a killed resident and an
# idle one do; and what it refuses (a malformed request, another identity, another user,
# too many waiting fronts), spoken to with its own protocol.
rpmem_add_catch_test(integration_resident
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/resident_test.cpp
  LIBS rpmem_client rpmem_test_sshd rpmemd_resident
  LABELS integration)
add_dependencies(integration_resident rpmemd)
