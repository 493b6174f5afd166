# The C ABI of librpmem.so.1 (no network): exported symbols, header constants and layouts.
add_test(NAME "abi: librpmem.so.1 exports exactly the 12 PMDK symbols"
  COMMAND ${PROJECT_SOURCE_DIR}/tests/abi/exports.sh $<TARGET_FILE:rpmem>)
set_tests_properties("abi: librpmem.so.1 exports exactly the 12 PMDK symbols" PROPERTIES LABELS unit)
add_executable(abi_header_test ${PROJECT_SOURCE_DIR}/tests/abi/header_test.c)
target_include_directories(abi_header_test PRIVATE ${PROJECT_SOURCE_DIR}/include/rpmem)
target_link_libraries(abi_header_test PRIVATE rpmem)
add_test(NAME "abi: librpmem.h constants and struct layout match PMDK" COMMAND abi_header_test)
set_tests_properties("abi: librpmem.h constants and struct layout match PMDK" PROPERTIES LABELS unit)
