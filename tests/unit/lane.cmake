rpmem_add_catch_test(unit_lane
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/lane_test.cpp
  LIBS rpmemd_lane
  LABELS unit)
