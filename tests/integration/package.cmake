# The Debian packages (cmake/install.cmake, scripts/package.sh): built with CPack from this build
# tree, extracted with dpkg-deb into a temporary root, and used as a clean machine would: stock
# libpmemobj replicates through the extracted librpmem.so.1 and rpmemd, find_package(rpmem)
# builds a program, the man pages render.
rpmem_add_catch_test(integration_package
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/package_test.cpp
  LIBS rpmem_client rpmem_test_sshd
  LABELS integration)
target_compile_definitions(integration_package PRIVATE
  RPMEM_INSTALL_PREFIX="${CMAKE_INSTALL_PREFIX}"
  RPMEM_INSTALL_LIBDIR="${CMAKE_INSTALL_LIBDIR}"
  RPMEM_INSTALL_BINDIR="${CMAKE_INSTALL_BINDIR}"
  RPMEM_INSTALL_MANDIR="${CMAKE_INSTALL_MANDIR}"
  RPMEM_INSTALL_INCLUDEDIR="${CMAKE_INSTALL_INCLUDEDIR}")
# CPack installs every packaged target: build them first.
add_dependencies(integration_package rpmem rpmemcpp rpmemd rpmem-tool rpmem-bench 06-pmemobj-replica)
