# The C++ API tutorial (include/rpmem/pool.hpp, replicated_pool.hpp): each example adds one idea.
# They link rpmem::cpp, the shared librpmemcpp.so.0 that is installed and packaged (the name
# find_package(rpmem) gives applications), so the tutorial exercises the shipped library.
foreach(ex 02-cpp-pool 03-flush-drain 04-replicated-pool 05-async-log)
  add_executable(${ex} ${ex}.cpp)
  target_link_libraries(${ex} PRIVATE rpmem::cpp)
endforeach()
