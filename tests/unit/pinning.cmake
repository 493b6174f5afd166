# Whether a registration can pin what it covers (lib/fabric/pinning): pure, no libfabric.
rpmem_add_catch_test(unit_pinning
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/pinning_test.cpp
  LIBS rpmem_pinning
  LABELS unit)
