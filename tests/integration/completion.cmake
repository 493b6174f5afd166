# The bash completion of rpmem and rpmemd (packaging/bash-completion/), installed with cmake
# --install, loaded by Debian's bash-completion, and checked against the programs' --help
# (tests/integration/completion.py).
add_test(NAME "bash completion: rpmem and rpmemd complete what their --help lists, loaded from share/bash-completion"
  COMMAND /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/completion.py ${PROJECT_SOURCE_DIR}
          ${PROJECT_BINARY_DIR})
set_tests_properties("bash completion: rpmem and rpmemd complete what their --help lists, loaded from share/bash-completion"
  PROPERTIES LABELS "integration")
