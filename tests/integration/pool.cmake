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
  LIBS rpmem rpmem_client rpmem_test_sshd
  LABELS integration)
target_include_directories(integration_capi PRIVATE ${PROJECT_SOURCE_DIR}/include/rpmem)
