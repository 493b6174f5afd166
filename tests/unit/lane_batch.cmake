# The client's lane batch (lib/client/lane_batch): what a request carries, when it is full, when
# it must go before a write, how large persists are cut; executed by rpmemd's lane executor.
rpmem_add_catch_test(unit_lane_batch
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/lane_batch_test.cpp
  LIBS rpmem_client_core rpmemd_lane
  LABELS unit)
