# How deep queues and completion queues must be (lib/fabric/queue_sizing): pure, no libfabric.
rpmem_add_catch_test(unit_queue_sizing
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/queue_sizing_test.cpp
  LIBS rpmem_queue_sizing
  LABELS unit)
