# Files, the POSIX way (lib/posix): a file replaced whole, safely. No libfabric.
rpmem_add_catch_test(unit_posix SOURCES ${CMAKE_CURRENT_LIST_DIR}/posix_file_test.cpp
                     LIBS rpmem_posix LABELS unit)
