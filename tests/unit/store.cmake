# rpmemd pool store: headers, mappings, create/open/remove on real files (needs only libpmem;
# the pmempool compatibility checks skip themselves when pmdk-tools is missing).
if(TARGET rpmemd_store)
  rpmem_add_catch_test(unit_store SOURCES ${CMAKE_CURRENT_LIST_DIR}/store_test.cpp
                       LIBS rpmemd_store LABELS unit)
endif()
