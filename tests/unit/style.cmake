# Every C and C++ source is clang-formatted (.clang-format), so formatting never drifts.
add_test(NAME "style: the C and C++ sources are clang-formatted"
  COMMAND ${PROJECT_SOURCE_DIR}/tests/style/format.sh ${PROJECT_SOURCE_DIR})
set_tests_properties("style: the C and C++ sources are clang-formatted" PROPERTIES LABELS unit)

# Every Catch test name is one ctest test: no ';' (catch_discover_tests splits there).
add_test(NAME "style: Catch test names have no semicolon"
  COMMAND python3 ${PROJECT_SOURCE_DIR}/tests/style/test_names.py ${PROJECT_SOURCE_DIR})
set_tests_properties("style: Catch test names have no semicolon" PROPERTIES LABELS unit)
