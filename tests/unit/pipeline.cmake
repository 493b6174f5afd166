# Asynchronous replication's engine (lib/async/pipeline) with a recording sink: order, copies,
# ring wrap, many writers. Compiled from its source: no libfabric.
rpmem_add_catch_test(unit_pipeline
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/pipeline_test.cpp ${PROJECT_SOURCE_DIR}/lib/async/pipeline.cpp
  LIBS fmt::fmt Threads::Threads
  LABELS unit)
target_include_directories(unit_pipeline PRIVATE ${PROJECT_SOURCE_DIR}/lib
                           ${PROJECT_SOURCE_DIR}/include)
