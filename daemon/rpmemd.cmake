# The control loop of a session, with the fabric target behind a factory (session.hpp): unit
# tested with a fake target, without libfabric. Beside it: checksum streaming, the status
# record, the end-of-session report.
add_library(rpmemd_session STATIC session.cpp session_checksums.cpp session_status.cpp
            session_report.cpp)
target_link_libraries(rpmemd_session PUBLIC rpmemd_config rpmemd_store rpmemd_lane rpmemd_plan rpmem_control rpmem_checksum
                      fmt::fmt)
target_include_directories(rpmemd_session PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})

add_executable(rpmemd rpmemd.cpp target.cpp target_listen.cpp target_worker.cpp)
target_link_libraries(rpmemd PRIVATE rpmemd_session rpmemd_resident rpmemd_config rpmemd_store rpmemd_guard rpmemd_lane rpmemd_plan rpmem_control
                      rpmem_fabric fmt::fmt Threads::Threads)
install(TARGETS rpmemd RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT daemon)
