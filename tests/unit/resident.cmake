# The resident rpmemd's pure parts (daemon/resident_protocol.*, daemon/resident_identity.*): the
# messages its processes exchange and which resident may serve a session. The processes
# themselves run in tests/integration/resident_test.cpp.
if(TARGET rpmemd_resident)
  rpmem_add_catch_test(unit_resident SOURCES ${CMAKE_CURRENT_LIST_DIR}/resident_test.cpp
                       LIBS rpmemd_resident LABELS unit)
endif()
