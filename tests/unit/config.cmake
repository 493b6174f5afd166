# rpmemd command line, config files and logging (daemon/config.*, daemon/log.*).
if(TARGET rpmemd_config)
  rpmem_add_catch_test(unit_config SOURCES ${CMAKE_CURRENT_LIST_DIR}/config_test.cpp
                       LIBS rpmemd_config LABELS unit)
endif()
