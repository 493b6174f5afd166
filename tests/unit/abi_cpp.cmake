# The C++ ABI of librpmemcpp.so.0 (no network): only rpmem::pool, rpmem::replicated_pool and
# rpmem::error are exported, SONAME librpmemcpp.so.0.
add_test(NAME "abi: librpmemcpp.so.0 exports only the rpmem:: C++ API"
  COMMAND ${PROJECT_SOURCE_DIR}/tests/abi/exports_cpp.sh $<TARGET_FILE:rpmemcpp>)
set_tests_properties("abi: librpmemcpp.so.0 exports only the rpmem:: C++ API" PROPERTIES LABELS unit)
