add_test(NAME "abi: a C program built with pkg-config librpmem runs create, persist, read, close"
  COMMAND ${PROJECT_SOURCE_DIR}/tests/abi/pkgconfig.sh ${PROJECT_BINARY_DIR} ${PROJECT_SOURCE_DIR})
set_tests_properties("abi: a C program built with pkg-config librpmem runs create, persist, read, close"
  PROPERTIES LABELS integration)
