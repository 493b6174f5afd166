# rpmem top's pure parts (tools/rpmem/metrics_read, top_view): the reader against the library's
# own writer (lib/client/stats_format, compiled in), and the view. No libfabric.
rpmem_add_catch_test(unit_top
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/top_test.cpp
          ${PROJECT_SOURCE_DIR}/tools/rpmem/metrics_read.cpp
          ${PROJECT_SOURCE_DIR}/tools/rpmem/top_view.cpp
          ${PROJECT_SOURCE_DIR}/lib/client/stats_format.cpp
  LIBS fmt::fmt LABELS unit)
target_include_directories(unit_top PRIVATE ${PROJECT_SOURCE_DIR}/lib
                           ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR}/tools/rpmem)
