# Control protocol: codec, status table, fd_stream over socketpairs and pipes. No libfabric.
rpmem_add_catch_test(unit_control
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/control_test.cpp ${CMAKE_CURRENT_LIST_DIR}/control_stream_test.cpp
    ${CMAKE_CURRENT_LIST_DIR}/session_record_test.cpp
  LIBS rpmem_control Threads::Threads
  LABELS unit)
