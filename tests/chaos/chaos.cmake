# The chaos harness (docs/chaos.md, scripts/chaos.sh): a seeded schedule of faults against
# replica hosts in network namespaces while writers of every kind record what was acknowledged.
# Its schedule and its record check are pure and unit-tested (no libfabric); the driver runs
# from scripts/chaos.sh.
add_library(rpmem_chaos_pure STATIC ${CMAKE_CURRENT_LIST_DIR}/schedule.cpp
            ${CMAKE_CURRENT_LIST_DIR}/records.cpp)
target_include_directories(rpmem_chaos_pure PUBLIC ${PROJECT_SOURCE_DIR}/tests)
target_link_libraries(rpmem_chaos_pure PUBLIC fmt::fmt)
rpmem_add_catch_test(unit_chaos
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/schedule_test.cpp ${CMAKE_CURRENT_LIST_DIR}/records_test.cpp
  LIBS rpmem_chaos_pure
  LABELS unit)

# The harness itself runs from the normal build only (scripts/chaos.sh); the sanitizer builds
# (scripts/sanitize.sh) leave it out with -DRPMEM_CHAOS=OFF: CI's time budget.
option(RPMEM_CHAOS "Build the chaos harness (rpmem-chaos and its writers)" ON)
if(NOT RPMEM_CHAOS)
  return()
endif()

# The writers (stock libpmemobj's is tests/support/pmemobj_log.c).
add_executable(chaos_rp_writer ${CMAKE_CURRENT_LIST_DIR}/rp_writer.cpp)
target_include_directories(chaos_rp_writer PRIVATE ${PROJECT_SOURCE_DIR}/tests)
target_link_libraries(chaos_rp_writer PRIVATE rpmem_cpp)
add_executable(chaos_pool_writer ${CMAKE_CURRENT_LIST_DIR}/pool_writer.cpp)
target_include_directories(chaos_pool_writer PRIVATE ${PROJECT_SOURCE_DIR}/tests)
target_link_libraries(chaos_pool_writer PRIVATE rpmem_cpp)

add_executable(rpmem-chaos ${CMAKE_CURRENT_LIST_DIR}/driver.cpp
               ${CMAKE_CURRENT_LIST_DIR}/options.cpp ${CMAKE_CURRENT_LIST_DIR}/tasks.cpp
               ${CMAKE_CURRENT_LIST_DIR}/cluster.cpp ${CMAKE_CURRENT_LIST_DIR}/writer.cpp
               ${CMAKE_CURRENT_LIST_DIR}/checker.cpp ${CMAKE_CURRENT_LIST_DIR}/proc.cpp)
target_link_libraries(rpmem-chaos PRIVATE rpmem_chaos_pure rpmem_test_sshd
                      rpmem_test_fault Threads::Threads)
target_compile_definitions(rpmem-chaos PRIVATE
  RPMEM_TEST_RPMEMD="${RPMEM_TEST_RPMEMD}"
  RPMEM_BINARY_DIR="${PROJECT_BINARY_DIR}")
add_dependencies(rpmem-chaos rpmem rpmemd rpmem-tool rpmem_pmemobj_log chaos_rp_writer
                 chaos_pool_writer)

# Its command line: a bad value is refused with the usage (exit 2), not an abort; --help
# prints the usage (exit 0); --print-schedule needs no root and sets nothing up.
add_test(NAME "chaos: rpmem-chaos refuses bad option values with its usage, --help prints it"
  COMMAND sh -c "set -e; c=$<TARGET_FILE:rpmem-chaos>
    $c --help | grep -q '^usage: rpmem-chaos'
    for bad in '--seed abc' '--seconds -5' '--minutes 1x' '--hosts 5' '--hosts 4294967298' '--mean-gap 0' '--seed'; do
      st=0; out=$($c $bad --print-schedule 2>&1) || st=$?
      [ $st -eq 2 ] || { echo \"$bad: exit $st, expected 2: $out\"; exit 1; }
      echo \"$out\" | grep -q '^usage: rpmem-chaos' || { echo \"$bad: no usage: $out\"; exit 1; }
    done
    $c --seed 1 --seconds 30 --print-schedule >/dev/null")
set_tests_properties("chaos: rpmem-chaos refuses bad option values with its usage, --help prints it"
  PROPERTIES LABELS unit)
