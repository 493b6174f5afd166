rpmem_add_catch_test(integration_pool
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/pool_test.cpp
  LIBS rpmem_client rpmem_test_sshd
  LABELS integration)
rpmem_add_catch_test(integration_data_path
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/data_path_test.cpp
  LIBS rpmem_client rpmem_test_sshd
  LABELS integration)
rpmem_add_catch_test(integration_stock_tools
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/stock_tools_test.cpp
  LIBS rpmem_client rpmem_test_sshd
  LABELS integration)
# The stock tools load librpmem.so.1, rpmemd and the example from the build tree.
add_dependencies(integration_stock_tools rpmem rpmemd 06-pmemobj-replica)
rpmem_add_catch_test(integration_capi
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/capi_test.cpp
  LIBS rpmem rpmem_client rpmem_test_sshd rpmem_test_fault
  LABELS integration)
target_include_directories(integration_capi PRIVATE ${PROJECT_SOURCE_DIR}/include/rpmem)
# librpmem's asynchronous mode (RPMEM_REPLICATION=async): the C calls, and stock libpmemobj
# (tests/support/pmemobj_seq.c) killed at random moments, its replicas promoted and checked.
rpmem_add_catch_test(integration_async_capi
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/async_capi_test.cpp
  LIBS rpmem rpmem_client rpmem_test_sshd rpmem_test_fault
  LABELS integration LONG)
target_include_directories(integration_async_capi PRIVATE ${PROJECT_SOURCE_DIR}/include/rpmem)
add_executable(rpmem_pmemobj_seq ${PROJECT_SOURCE_DIR}/tests/support/pmemobj_seq.c)
target_link_libraries(rpmem_pmemobj_seq PRIVATE PkgConfig::PMEMOBJ)
add_dependencies(integration_async_capi rpmem rpmemd rpmem-tool rpmem_pmemobj_seq)

# A C program that exits with its pool open (capi_test: the keep-alive and process exit).
add_executable(rpmem_exit_open ${PROJECT_SOURCE_DIR}/tests/support/exit_open.c)
target_include_directories(rpmem_exit_open PRIVATE ${PROJECT_SOURCE_DIR}/include/rpmem)
target_link_libraries(rpmem_exit_open PRIVATE rpmem Threads::Threads)
add_dependencies(integration_capi rpmem_exit_open)

# A C program that dlopens librpmem, fails a create and dlcloses it (capi_test, "[dlclose]").
add_executable(rpmem_dlclose ${PROJECT_SOURCE_DIR}/tests/support/dlclose_rpmem.c)
target_include_directories(rpmem_dlclose PRIVATE ${PROJECT_SOURCE_DIR}/include/rpmem)
target_link_libraries(rpmem_dlclose PRIVATE ${CMAKE_DL_LIBS})
add_dependencies(integration_capi rpmem_dlclose rpmem)

# A stand-in libfabric.so.1 whose constructor installs signal handlers, and the program that
# loads it through librpmem (capi_test, "[signals]": which handlers the load undoes).
add_library(rpmem_fake_libfabric SHARED ${PROJECT_SOURCE_DIR}/tests/support/fake_libfabric.c)
set_target_properties(rpmem_fake_libfabric PROPERTIES OUTPUT_NAME fabric SOVERSION 1
  LIBRARY_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/fake-libfabric)
add_executable(rpmem_handlers_kept ${PROJECT_SOURCE_DIR}/tests/support/handlers_kept.c)
target_include_directories(rpmem_handlers_kept PRIVATE ${PROJECT_SOURCE_DIR}/include/rpmem)
target_link_libraries(rpmem_handlers_kept PRIVATE rpmem ${CMAKE_DL_LIBS})
add_dependencies(integration_capi rpmem_fake_libfabric rpmem_handlers_kept)
