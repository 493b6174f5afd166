# The chaos harness (docs/chaos.md, scripts/chaos.sh): a seeded schedule of faults against
# replica hosts in network namespaces while writers of every kind record what was acknowledged.
# Its schedule and its record check are pure and unit-tested (no libfabric); the driver runs
# from scripts/chaos.sh.
add_library(rpmem_chaos_pure STATIC ${CMAKE_CURRENT_LIST_DIR}/schedule.cpp
            ${CMAKE_CURRENT_LIST_DIR}/records.cpp)
target_include_directories(rpmem_chaos_pure PUBLIC ${PROJECT_SOURCE_DIR}/tests)
target_link_libraries(rpmem_chaos_pure PUBLIC fmt::fmt)
rpmem_add_catch_test(unit_chaos
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/schedule_test.cpp ${CMAKE_CURRENT_LIST_DIR}/records_test.cpp
  LIBS rpmem_chaos_pure
  LABELS unit)
