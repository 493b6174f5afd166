# scripts/sanitize.sh forgives a leak report only when tests/sanitizers/known-leaks lists its
# exact site in the installed library's build; every variation of such a report still fails.
add_test(NAME "sanitizers: only a listed third-party leak site, in the installed library build, is forgiven"
  COMMAND python3 ${PROJECT_SOURCE_DIR}/tests/sanitizers/known_leaks_test.py)
set_tests_properties("sanitizers: only a listed third-party leak site, in the installed library build, is forgiven"
  PROPERTIES LABELS unit)
