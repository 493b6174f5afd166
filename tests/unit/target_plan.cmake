# How rpmemd sizes a pool's fabric target (daemon/target_plan) and which persistence method it
# announces (daemon/target_method): pure, no libfabric.
rpmem_add_catch_test(unit_target_plan
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/target_plan_test.cpp
          ${CMAKE_CURRENT_LIST_DIR}/target_method_test.cpp
  LIBS rpmemd_plan
  LABELS unit)
