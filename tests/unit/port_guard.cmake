# Which silent connections to the fabric port rpmemd closes, and its log-line budget
# (daemon/port_guard.*). The sockets themselves are tested in tests/integration/attack_test.cpp.
if(TARGET rpmemd_guard)
  rpmem_add_catch_test(unit_port_guard SOURCES ${CMAKE_CURRENT_LIST_DIR}/port_guard_test.cpp
                       LIBS rpmemd_guard LABELS unit)
endif()
