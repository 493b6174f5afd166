# rpmemd's control loop (daemon/session.cpp) with a fake fabric target: no libfabric.
if(TARGET rpmemd_session)
  rpmem_add_catch_test(unit_daemon_session SOURCES ${CMAKE_CURRENT_LIST_DIR}/daemon_session_test.cpp
                       LIBS rpmemd_session LABELS unit)
endif()
