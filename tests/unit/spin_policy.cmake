# When a waiting thread polls instead of blocking (lib/fabric/spin_policy), without libfabric.
rpmem_add_catch_test(unit_spin_policy
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/spin_policy_test.cpp
  LIBS rpmem_spin_policy
  LABELS unit)
