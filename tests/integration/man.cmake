# Every man page in docs/man renders with man -l, without groff warnings (.so links resolve
# from a man3/man7 layout, as installed).
add_test(NAME "docs: man pages render with man -l"
  COMMAND sh -c "set -e; d=$(mktemp -d); trap 'rm -rf $d' EXIT; \
for p in ${PROJECT_SOURCE_DIR}/docs/man/*.[1-8]; do s=\${p##*.}; mkdir -p $d/man$s; cp $p $d/man$s/; done; \
cd $d; n=0; for p in man*/*; do out=$(MANWIDTH=80 man --warnings -l $p 2>&1 >/dev/null); \
if [ -n \"$out\" ]; then echo \"$p: $out\"; exit 1; fi; n=$((n+1)); done; echo \"$n pages render\"")
set_tests_properties("docs: man pages render with man -l" PROPERTIES LABELS "unit")

# Every C++ block of README.md compiles against the tree's headers (tests/docs/readme_cpp.py).
add_test(NAME "docs: README C++ snippets compile"
  COMMAND python3 ${PROJECT_SOURCE_DIR}/tests/docs/readme_cpp.py ${PROJECT_SOURCE_DIR}
          ${CMAKE_CXX_COMPILER})
set_tests_properties("docs: README C++ snippets compile" PROPERTIES LABELS "unit")

# README.md's "Trying it by hand" shell block runs (tests/docs/readme_sh.py): a private sshd,
# rpmemd over SSH and rpmem-demo, as a reader would type them.
add_test(NAME "docs: README's by-hand walk-through runs"
  COMMAND python3 ${PROJECT_SOURCE_DIR}/tests/docs/readme_sh.py ${PROJECT_SOURCE_DIR}
          ${PROJECT_BINARY_DIR})
set_tests_properties("docs: README's by-hand walk-through runs" PROPERTIES LABELS "integration"
  SKIP_RETURN_CODE 77)

# The RPMEM_* variables, rpmemd's options, config keys and variables the code reads are the ones
# librpmem(7), rpmemd(1) and packaging/rpmemd.conf document, both ways (tests/docs/env_keys.py).
add_test(NAME "docs: every variable, rpmemd option and config key the code reads is documented, and only those"
  COMMAND python3 ${PROJECT_SOURCE_DIR}/tests/docs/env_keys.py ${PROJECT_SOURCE_DIR})
set_tests_properties("docs: every variable, rpmemd option and config key the code reads is documented, and only those"
  PROPERTIES LABELS "unit")
