# Client settings from the environment (lib/client/env.cpp): pure parsing, no libfabric.
rpmem_add_catch_test(unit_client_env
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/client_env_test.cpp ${PROJECT_SOURCE_DIR}/lib/client/env.cpp
          ${PROJECT_SOURCE_DIR}/lib/client/log.cpp
  LIBS rpmem_wire fmt::fmt
  LABELS unit)
