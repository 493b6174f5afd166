# How rpmemd sizes a pool's fabric target (daemon/target_plan): pure, no libfabric.
rpmem_add_catch_test(unit_target_plan
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/target_plan_test.cpp
  LIBS rpmemd_plan
  LABELS unit)
