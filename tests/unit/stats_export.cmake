# The metrics file's formats (lib/client/stats_export), parsed by parsers from Debian; the
# source is compiled in directly so the test does not link libfabric.
rpmem_add_catch_test(unit_stats_export
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/stats_export_test.cpp
          ${PROJECT_SOURCE_DIR}/lib/client/stats_format.cpp
          ${PROJECT_SOURCE_DIR}/lib/client/stats_export.cpp
  LIBS rpmem_posix fmt::fmt Threads::Threads LABELS unit)
target_include_directories(unit_stats_export PRIVATE ${PROJECT_SOURCE_DIR}/lib
                           ${PROJECT_SOURCE_DIR}/include)
