# Asynchronous replication's staging ring (lib/async/staging_ring.hpp): pure, header-only.
rpmem_add_catch_test(unit_staging_ring
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/staging_ring_test.cpp
  LIBS fmt::fmt
  LABELS unit)
target_include_directories(unit_staging_ring PRIVATE ${PROJECT_SOURCE_DIR}/lib
                           ${PROJECT_SOURCE_DIR}/include)
