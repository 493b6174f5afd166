# libpmemobj's unreplicated bytes (lib/pmdk/obj_heap), checked against pools Debian's
# libpmemobj writes: no allocated object may fall in them.
rpmem_add_catch_test(unit_obj_heap SOURCES ${CMAKE_CURRENT_LIST_DIR}/obj_heap_test.cpp
                     LIBS rpmem_pmdk PkgConfig::PMEMOBJ LABELS unit)
