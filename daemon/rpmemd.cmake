add_executable(rpmemd rpmemd.cpp session.cpp target.cpp target_worker.cpp)
target_link_libraries(rpmemd PRIVATE rpmemd_config rpmemd_store rpmemd_guard rpmemd_lane rpmemd_plan rpmem_control
                      rpmem_fabric fmt::fmt Threads::Threads)
install(TARGETS rpmemd RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT daemon)
