# What `cmake --install` lays out, and the Debian packages CPack builds from it.
#
#   lib/librpmem.so.1, librpmemcpp.so.0   component lib  → librpmem1
#   lib/librpmem.so, librpmemcpp.so       component dev  → librpmem-dev
#   include/librpmem.h, include/rpmem/    component dev
#   lib/pkgconfig/librpmem.pc             component dev
#   lib/cmake/rpmem/ (rpmem::rpmem,       component dev
#                     rpmem::cpp)
#   bin/rpmemd, bin/rpmem, bin/rpmem-bench, etc/rpmemd/rpmemd.conf, man pages
#                                         component daemon → rpmemd
#
# librpmem.so.1, librpmem.h and librpmem.pc are installed by lib/capi/CMakeLists.txt,
# rpmemd by daemon/rpmemd.cmake; this file adds everything else (librpmemcpp.so.0, the C++ API
# built by lib/cpp/CMakeLists.txt, included). Included once, from
# tools/rpmem/CMakeLists.txt.
include(CMakePackageConfigHelpers)

install(TARGETS rpmem-tool RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT daemon)
if(TARGET rpmem-bench)
  install(TARGETS rpmem-bench RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT daemon)
endif()

# The C++ API as a shared library: librpmemcpp.so.0 (SONAME) in the runtime package, the
# librpmemcpp.so link in -dev; rpmem::cpp in the CMake package (EXPORT_NAME cpp).
install(TARGETS rpmemcpp EXPORT rpmemTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT lib NAMELINK_COMPONENT dev)

# The C++ API headers (include/rpmem/*.hpp), as they exist at install time.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/rpmem/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/rpmem
        COMPONENT dev FILES_MATCHING PATTERN "*.hpp")

# CMake package: find_package(rpmem) → rpmem::rpmem (C ABI) and rpmem::cpp (C++ API).
set(RPMEM_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/rpmem)
install(EXPORT rpmemTargets NAMESPACE rpmem:: DESTINATION ${RPMEM_CMAKE_DIR} COMPONENT dev)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/rpmemConfig.cmake.in
  ${CMAKE_BINARY_DIR}/rpmemConfig.cmake INSTALL_DESTINATION ${RPMEM_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/rpmemConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_BINARY_DIR}/rpmemConfig.cmake ${CMAKE_BINARY_DIR}/rpmemConfigVersion.cmake
        DESTINATION ${RPMEM_CMAKE_DIR} COMPONENT dev)

# The example daemon configuration. With the prefix /usr (distribution packages) it goes to
# /etc, where rpmemd reads it; otherwise under the prefix (etc/rpmemd), so `cmake --install
# --prefix X` stays relocatable.
if(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  set(RPMEM_CONF_DIR ${CMAKE_INSTALL_FULL_SYSCONFDIR}/rpmemd)
else()
  set(RPMEM_CONF_DIR ${CMAKE_INSTALL_SYSCONFDIR}/rpmemd)
endif()
install(FILES ${PROJECT_SOURCE_DIR}/packaging/rpmemd.conf DESTINATION ${RPMEM_CONF_DIR}
        COMPONENT daemon)

# Man pages (roff, docs/man/*.[1-8]): section 3 and 7 describe the library (librpmem-dev, as
# Debian ships API pages with -dev packages), 1 and 5 the daemon, the tool and pool sets.
file(GLOB RPMEM_MAN_PAGES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/docs/man/*.[1-8])
foreach(page ${RPMEM_MAN_PAGES})
  get_filename_component(name ${page} NAME)
  string(REGEX REPLACE ".*\\.([1-8])$" "\\1" section ${name})
  if(section STREQUAL "3" OR section STREQUAL "7")
    set(component dev)
  else()
    set(component daemon)
  endif()
  install(FILES ${page} DESTINATION ${CMAKE_INSTALL_MANDIR}/man${section} COMPONENT ${component})
endforeach()

# --- CPack: three Debian packages, Debian's conventions -----------------------------------
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME rpmem)
set(CPACK_PACKAGE_VENDOR "rpmem")
set(CPACK_PACKAGE_CONTACT "rpmem maintainers <rpmem@localhost>")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Remote persistent memory replication (librpmem drop-in)")
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL lib dev daemon)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON) # Depends: from the binaries (dpkg-shlibdeps)
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)

set(CPACK_DEBIAN_LIB_PACKAGE_NAME librpmem1)
set(CPACK_DEBIAN_LIB_PACKAGE_SECTION libs)
set(CPACK_COMPONENT_LIB_DESCRIPTION
  "Remote persistent memory replication library (drop-in for PMDK's librpmem)\n"
  "librpmem.so.1 with PMDK's 12 functions: stock libpmemobj and libpmempool load it for\n"
  "REPLICA lines in pool set files and replicate over SSH and libfabric to rpmemd.\n"
  "librpmemcpp.so.0: the C++ API (rpmem::pool, rpmem::replicated_pool).")
set(CPACK_DEBIAN_LIB_PACKAGE_RECOMMENDS "openssh-client")

set(CPACK_DEBIAN_DEV_PACKAGE_NAME librpmem-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_COMPONENT_DEV_DEPENDS lib)
set(CPACK_COMPONENT_DEV_DESCRIPTION
  "Remote persistent memory replication library - development files\n"
  "librpmem.h, the C++ API headers (include/rpmem/), the librpmem.so and librpmemcpp.so\n"
  "links, librpmem.pc, the CMake package (find_package(rpmem): targets rpmem::rpmem for\n"
  "the C ABI, rpmem::cpp for the C++ API) and the API man pages.")

set(CPACK_DEBIAN_DAEMON_PACKAGE_NAME rpmemd)
set(CPACK_DEBIAN_DAEMON_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_DAEMON_PACKAGE_RECOMMENDS "openssh-server")
set(CPACK_COMPONENT_DAEMON_DESCRIPTION
  "Remote persistent memory replication daemon and tools\n"
  "rpmemd, started over SSH on replica nodes for each pool a client opens; rpmem, a tool\n"
  "to create, inspect, verify, synchronize and promote replicas; rpmem-bench.")
# dpkg's conffile handling for the example configuration under /etc.
if(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  file(WRITE ${CMAKE_BINARY_DIR}/packaging/conffiles "${RPMEM_CONF_DIR}/rpmemd.conf\n")
  set(CPACK_DEBIAN_DAEMON_PACKAGE_CONTROL_EXTRA ${CMAKE_BINARY_DIR}/packaging/conffiles)
endif()
# ldconfig triggers for the shared library.
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)

include(CPack)
