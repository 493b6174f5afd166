# Which connection a lane travels on (lib/client/lane_map.hpp).
rpmem_add_catch_test(unit_lane_map
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/lane_map_test.cpp
  LIBS rpmem_wire
  LABELS unit)
