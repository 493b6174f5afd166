rpmem_add_catch_test(integration_pool
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/pool_test.cpp
  LIBS rpmem_client rpmem_test_sshd
  LABELS integration)
rpmem_add_catch_test(integration_data_path
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/data_path_test.cpp
  LIBS rpmem_client rpmem_test_sshd
  LABELS integration)
