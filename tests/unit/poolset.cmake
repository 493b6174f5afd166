# Pool set parser unit tests (pure logic: no libfabric).
rpmem_add_catch_test(unit_poolset
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/poolset_test.cpp
  LIBS rpmem_poolset
  LABELS unit)
