# The private-sshd fixture shared by integration tests (needs no libfabric).
add_library(rpmem_test_sshd STATIC ${CMAKE_CURRENT_LIST_DIR}/sshd.cpp)
target_include_directories(rpmem_test_sshd PUBLIC ${CMAKE_CURRENT_LIST_DIR}/..)
target_link_libraries(rpmem_test_sshd PUBLIC rpmem_ssh fmt::fmt)
