# rpmem::pool and rpmem::replicated_pool through the private sshd and the real rpmemd; also runs
# the C++ tutorial examples 02-05.
rpmem_add_catch_test(integration_replication
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/replication_test.cpp
  LIBS rpmem_cpp rpmem_test_sshd
  LABELS integration LONG)
add_dependencies(integration_replication rpmemd 02-cpp-pool 03-flush-drain 04-replicated-pool
                 05-async-log)
# The writer the asynchronous prefix test kills mid-stream.
add_executable(rpmem_async_writer ${PROJECT_SOURCE_DIR}/tests/support/async_writer.cpp)
target_include_directories(rpmem_async_writer PRIVATE ${PROJECT_SOURCE_DIR}/tests)
target_link_libraries(rpmem_async_writer PRIVATE rpmem_cpp fmt::fmt)
target_link_libraries(integration_replication PRIVATE rpmem_test_fault)
add_dependencies(integration_replication rpmem_async_writer rpmem-tool)
