# Every C and C++ source is clang-formatted (.clang-format), so formatting never drifts.
add_test(NAME "style: the C and C++ sources are clang-formatted"
  COMMAND ${PROJECT_SOURCE_DIR}/tests/style/format.sh ${PROJECT_SOURCE_DIR})
set_tests_properties("style: the C and C++ sources are clang-formatted" PROPERTIES LABELS unit)
