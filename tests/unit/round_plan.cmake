# Asynchronous replication's rounds (lib/async/round_plan.hpp): pure, header-only.
rpmem_add_catch_test(unit_round_plan
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/round_plan_test.cpp
  LABELS unit)
target_include_directories(unit_round_plan PRIVATE ${PROJECT_SOURCE_DIR}/lib)
