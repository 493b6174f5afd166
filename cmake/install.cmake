# What `cmake --install` lays out, and the Debian packages CPack builds from it.
#
#   lib/librpmem.so.1, librpmemcpp.so.0   component lib  → librpmem1
#   lib/librpmem.so, librpmemcpp.so       component dev  → librpmem-dev
#   include/librpmem.h, include/rpmem/    component dev
#   lib/pkgconfig/librpmem.pc             component dev
#   lib/cmake/rpmem/ (rpmem::rpmem,       component dev
#                     rpmem::cpp)
#   bin/rpmemd, etc/rpmemd/rpmemd.conf, rpmemd(1), share/bash-completion/completions/rpmemd
#                                         component daemon → rpmemd (replica nodes)
#   bin/rpmem, bin/rpmem-bench, bin/rpmem-floor, their pages, rpmem-poolset(5),
#   share/rpmem-tools/prometheus/rpmem.rules.yml (alerting and recording rules),
#   share/bash-completion/completions/rpmem
#                                         component tools → rpmem-tools (either side; no
#                                         SSH server pulled onto application hosts)
#   share/doc/<package>/copyright, changelog.Debian.gz: every package
#
# Man pages are installed gzip -9n compressed, binaries stripped by CPack (the debug symbols
# go to -dbgsym packages); the version carries epoch 1 so it sorts above PMDK-era 1.10.
#
# librpmem.so.1, librpmem.h and librpmem.pc are installed by lib/capi/CMakeLists.txt,
# rpmemd by daemon/rpmemd.cmake; this file adds everything else (librpmemcpp.so.0, the C++ API
# built by lib/cpp/CMakeLists.txt, included). Included once, from
# tools/rpmem/CMakeLists.txt.
include(CMakePackageConfigHelpers)

install(TARGETS rpmem-tool RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT tools)
if(TARGET rpmem-bench)
  install(TARGETS rpmem-bench RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT tools)
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

# Bash completion, where Debian's bash-completion loads it the first time each command is
# completed (/usr/share/bash-completion/completions/COMMAND): rpmem's with the tools, rpmemd's
# with the daemon.
install(FILES ${PROJECT_SOURCE_DIR}/packaging/bash-completion/rpmem
        DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/bash-completion/completions COMPONENT tools)
install(FILES ${PROJECT_SOURCE_DIR}/packaging/bash-completion/rpmemd
        DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/bash-completion/completions COMPONENT daemon)

# The Prometheus rules for the metrics files librpmem writes (docs/monitoring.md): data of the
# tools package, where a Prometheus server's rule_files can name them.
install(FILES ${PROJECT_SOURCE_DIR}/packaging/prometheus/rpmem.rules.yml
        DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/rpmem-tools/prometheus COMPONENT tools)

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

# Man pages (roff, docs/man/*.[1-8]), compressed as Debian ships them: section 3 and 7
# describe the library (librpmem-dev, as Debian ships API pages with -dev packages), rpmemd(1)
# the daemon; rpmem(1), rpmem-bench(1), rpmem-floor(1) and rpmem-poolset(5) go with the tools.
file(GLOB RPMEM_MAN_PAGES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/docs/man/*.[1-8])
set(RPMEM_MAN_GZ)
foreach(page ${RPMEM_MAN_PAGES})
  get_filename_component(name ${page} NAME)
  string(REGEX REPLACE ".*\\.([1-8])$" "\\1" section ${name})
  if(section STREQUAL "3" OR section STREQUAL "7")
    set(component dev)
  elseif(name STREQUAL "rpmemd.1")
    set(component daemon)
  else()
    set(component tools)
  endif()
  set(gz ${CMAKE_BINARY_DIR}/man/${name}.gz)
  add_custom_command(OUTPUT ${gz} COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/man
    COMMAND gzip -9nc ${page} > ${gz} DEPENDS ${page} VERBATIM)
  list(APPEND RPMEM_MAN_GZ ${gz})
  install(FILES ${gz} DESTINATION ${CMAKE_INSTALL_MANDIR}/man${section} COMPONENT ${component})
endforeach()
add_custom_target(rpmem-man ALL DEPENDS ${RPMEM_MAN_GZ})

# Debian's per-package documents: the copyright file and the changelog.
set(RPMEM_DEB_VERSION "1:${PROJECT_VERSION}-1")
configure_file(${PROJECT_SOURCE_DIR}/packaging/changelog.in ${CMAKE_BINARY_DIR}/packaging/changelog.Debian @ONLY)
add_custom_command(OUTPUT ${CMAKE_BINARY_DIR}/packaging/changelog.Debian.gz
  COMMAND gzip -9nc ${CMAKE_BINARY_DIR}/packaging/changelog.Debian > ${CMAKE_BINARY_DIR}/packaging/changelog.Debian.gz
  DEPENDS ${CMAKE_BINARY_DIR}/packaging/changelog.Debian VERBATIM)
add_custom_target(rpmem-changelog ALL DEPENDS ${CMAKE_BINARY_DIR}/packaging/changelog.Debian.gz)
foreach(pair lib:librpmem1 dev:librpmem-dev daemon:rpmemd tools:rpmem-tools)
  string(REPLACE ":" ";" pair ${pair})
  list(GET pair 0 component)
  list(GET pair 1 package)
  install(FILES ${PROJECT_SOURCE_DIR}/packaging/copyright
                ${CMAKE_BINARY_DIR}/packaging/changelog.Debian.gz
          DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/${package} COMPONENT ${component})
  # lintian's findings we keep, each with its reason (packaging/lintian/<package>).
  install(FILES ${PROJECT_SOURCE_DIR}/packaging/lintian/${package}
          DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/lintian/overrides COMPONENT ${component})
endforeach()

# --- CPack: four Debian packages, Debian's conventions -------------------------------------
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME rpmem)
set(CPACK_PACKAGE_VENDOR "rpmem")
set(CPACK_PACKAGE_CONTACT "rpmem maintainers <maintainers@rpmem.example.org>")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_DEBIAN_PACKAGE_EPOCH 1)   # above PMDK-era librpmem1/rpmemd 1.10 (bullseye)
set(CPACK_DEBIAN_PACKAGE_RELEASE 1) # 1:0.1.0-1, as the changelog says
# No CPACK_PACKAGE_DESCRIPTION_SUMMARY: CPack would put it before each package's own synopsis.
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL lib dev daemon tools)
# Debian's file names: name_version_arch.deb with the version *without* its epoch. CPack's
# DEB-DEFAULT keeps the "1:", and `apt install ./librpmem1_1:0.1.0-1_amd64.deb` then installs
# nothing and says nothing (apt reads the colon as an architecture qualifier):
# scripts/clean-root.sh found it.
execute_process(COMMAND dpkg --print-architecture OUTPUT_VARIABLE rpmem_deb_arch
                OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT rpmem_deb_arch)
  set(rpmem_deb_arch amd64)
endif()
foreach(c LIB DEV DAEMON TOOLS)
  set(rpmem_deb_name_LIB librpmem1)
  set(rpmem_deb_name_DEV librpmem-dev)
  set(rpmem_deb_name_DAEMON rpmemd)
  set(rpmem_deb_name_TOOLS rpmem-tools)
  set(CPACK_DEBIAN_${c}_FILE_NAME
      "${rpmem_deb_name_${c}}_${PROJECT_VERSION}-1_${rpmem_deb_arch}.deb")
endforeach()
set(CPACK_DEBIAN_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON) # Depends: from the binaries (dpkg-shlibdeps)
# ... except libfabric, which the binaries load at their first fabric call instead of linking
# it (lib/fabric/library.cpp says why): dpkg-shlibdeps cannot see it. CPack adds what
# dpkg-shlibdeps finds to these.
set(CPACK_DEBIAN_LIB_PACKAGE_DEPENDS "libfabric1")
set(CPACK_DEBIAN_DAEMON_PACKAGE_DEPENDS "libfabric1")
set(CPACK_DEBIAN_TOOLS_PACKAGE_DEPENDS "libfabric1")
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)
# Binaries stripped, their debug symbols in <package>-dbgsym .ddebs (CPack strips them while
# it extracts the symbols; CPACK_STRIP_FILES would leave it nothing to extract).
set(CPACK_DEBIAN_DEBUGINFO_PACKAGE ON)

# A description is one string: its first line the synopsis, the rest CPack indents. (A CMake
# list here would join its lines with ';'.)
set(CPACK_DEBIAN_LIB_PACKAGE_NAME librpmem1)
set(CPACK_DEBIAN_LIB_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_LIB_DESCRIPTION "Remote persistent memory replication library
A drop-in for PMDK's librpmem: librpmem.so.1 with PMDK's 12 functions. Stock
libpmemobj and libpmempool load it for REPLICA lines in pool set files and
replicate over SSH and libfabric to rpmemd. librpmemcpp.so.0 is the C++ API
(rpmem::pool, rpmem::replicated_pool).")
set(CPACK_DEBIAN_LIB_PACKAGE_RECOMMENDS "openssh-client")

set(CPACK_DEBIAN_DEV_PACKAGE_NAME librpmem-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_COMPONENT_DEV_DEPENDS lib)
set(CPACK_DEBIAN_DEV_DESCRIPTION "Remote persistent memory replication library - development files
librpmem.h, the C++ API headers (include/rpmem/), the librpmem.so and
librpmemcpp.so links, librpmem.pc, the CMake package (find_package(rpmem):
rpmem::rpmem for the C ABI, rpmem::cpp for the C++ API) and the API manual
pages (librpmem(7), rpmem_create(3) and the others).")

set(CPACK_DEBIAN_DAEMON_PACKAGE_NAME rpmemd)
set(CPACK_DEBIAN_DAEMON_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_DAEMON_PACKAGE_RECOMMENDS "openssh-server")
# Debian's pmdk-tools 1.12 ships PMDK's rpmemd(1) page (without rpmemd): ours replaces that one
# file, so the two install together (PMDK 1.13 dropped rpmemd and its page). Replaces without
# Breaks: pmdk-tools (pmempool) stays installed. scripts/clean-root.sh installs both.
set(CPACK_DEBIAN_DAEMON_PACKAGE_REPLACES "pmdk-tools (<< 1.13~)")
set(CPACK_DEBIAN_DAEMON_PACKAGE_SUGGESTS "rpmem-tools")
set(CPACK_DEBIAN_DAEMON_DESCRIPTION "Remote persistent memory replication daemon
rpmemd, started over SSH on a replica node for each pool a client (librpmem,
libpmemobj with REPLICA lines) creates or opens.")

set(CPACK_DEBIAN_TOOLS_PACKAGE_NAME rpmem-tools)
set(CPACK_DEBIAN_TOOLS_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_TOOLS_PACKAGE_RECOMMENDS "openssh-client")
set(CPACK_DEBIAN_TOOLS_DESCRIPTION "Remote persistent memory replication tools
rpmem creates, inspects, verifies, synchronizes and promotes remote replicas of
persistent memory pools (JSON output for monitoring) and shows them live (rpmem
top); rpmem-bench measures the replication; Prometheus alerting and recording
rules for librpmem's metrics. For application hosts and replica nodes alike.")
# dpkg's conffile handling for the example configuration under /etc.
if(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  file(WRITE ${CMAKE_BINARY_DIR}/packaging/conffiles "${RPMEM_CONF_DIR}/rpmemd.conf\n")
  set(CPACK_DEBIAN_DAEMON_PACKAGE_CONTROL_EXTRA ${CMAKE_BINARY_DIR}/packaging/conffiles)
endif()
# The shared libraries' shlibs (programs linked with them depend on librpmem1 (>= this
# version)) and dpkg's ldconfig trigger, as Debian's library packages have them. (CPack's own
# GENERATE_SHLIBS runs ldconfig from postinst/postrm instead, which lintian rejects.)
file(WRITE ${CMAKE_BINARY_DIR}/packaging/lib/shlibs
  "librpmem 1 librpmem1 (>= ${CPACK_DEBIAN_PACKAGE_EPOCH}:${PROJECT_VERSION})\n"
  "librpmemcpp 0 librpmem1 (>= ${CPACK_DEBIAN_PACKAGE_EPOCH}:${PROJECT_VERSION})\n")
file(WRITE ${CMAKE_BINARY_DIR}/packaging/lib/triggers "activate-noawait ldconfig\n")
set(CPACK_DEBIAN_LIB_PACKAGE_CONTROL_EXTRA
  ${CMAKE_BINARY_DIR}/packaging/lib/shlibs ${CMAKE_BINARY_DIR}/packaging/lib/triggers)

include(CPack)
