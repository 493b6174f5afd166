# The client's log (lib/client/log.cpp): where an error goes, syslog included. No libfabric.
rpmem_add_catch_test(unit_client_log
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/client_log_test.cpp ${PROJECT_SOURCE_DIR}/lib/client/log.cpp
          ${PROJECT_SOURCE_DIR}/lib/client/env.cpp
  LIBS rpmem_wire fmt::fmt
  LABELS unit)
target_include_directories(unit_client_log PRIVATE ${PROJECT_SOURCE_DIR}/lib
                           ${PROJECT_SOURCE_DIR}/include)
