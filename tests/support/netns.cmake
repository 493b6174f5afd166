# Fault-test support: network namespaces joined by a veth pair (tests that cut links), a child
# process with pipes (driving rpmemd or a client directly), and the client program that runs a
# persist stream inside a namespace or gets killed.
add_library(rpmem_test_fault STATIC ${CMAKE_CURRENT_LIST_DIR}/netns.cpp
            ${CMAKE_CURRENT_LIST_DIR}/child.cpp)
target_include_directories(rpmem_test_fault PUBLIC ${CMAKE_CURRENT_LIST_DIR}/..)
target_link_libraries(rpmem_test_fault PUBLIC fmt::fmt)
add_executable(rpmem_fault_client ${CMAKE_CURRENT_LIST_DIR}/fault_client.cpp)
target_link_libraries(rpmem_fault_client PRIVATE rpmem_client)
