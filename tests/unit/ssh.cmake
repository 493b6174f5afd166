# ssh part: pure parsing (target strings, environment options); no sshd, no libfabric.
rpmem_add_catch_test(unit_ssh_target
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/ssh_target_test.cpp
  LIBS rpmem_ssh
  LABELS unit)
