#!/usr/bin/env bash
# Builds rpmem with sanitizers and runs the test suite under them.
#   scripts/sanitize.sh asan   ASan + UBSan (-DRPMEM_SANITIZE=address,undefined) in build-asan/:
#                              every test
#   scripts/sanitize.sh tsan   TSan (-DRPMEM_SANITIZE=thread) in build-tsan/: the multi-threaded
#                              tests (every test binary but the ssh, ABI, foreign-program and
#                              stock-libpmemobj outage ones, see TSAN_EXCLUDE)
# Extra arguments go to ctest. BUILD_DIR overrides the build directory.
#
# rpmemd is started over ssh by the tests, so the sanitizer options cannot travel in its
# environment: RPMEM_TEST_DAEMON_ENV (tests/integration/replica_fixture.hpp) prefixes them to
# its command line. Every instrumented process (test binaries, rpmemd, examples) writes its
# reports to log_path files under $BUILD_DIR/sanitizer-logs/ (named KIND.PROGRAM.PID, so a
# report names the program that made it: rpmemd or a test binary), and a report there fails the run
# even when the test that provoked it passed (rpmemd's exit status is not always observed).
# Suppressions: tests/sanitizers/*.supp (third-party code only, each entry says why).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
kind=${1:-}
[ $# -gt 0 ] && shift
case "$kind" in
asan) sanitize=address,undefined build=${BUILD_DIR:-build-asan} runtime=libasan.so ;;
tsan) sanitize=thread build=${BUILD_DIR:-build-tsan} runtime=libtsan.so ;;
*)
  echo "usage: $0 asan|tsan [ctest arguments]" >&2
  exit 2
  ;;
esac

scripts/install-deps.sh >/dev/null
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
# GCC 12 with -fsanitize and -O2 warns "may be used uninitialized" inside libstdc++'s
# std::function/std::regex (Catch2's test_main.cpp): a known false positive of instrumented
# builds (GCC documents that sanitizers make -Wmaybe-uninitialized unreliable). Only that
# warning is relaxed here; the normal build keeps it an error.
# -O1 -g1: instrumented builds compile faster and report with file:line all the same.
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S . -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1" \
    -DRPMEM_SANITIZE="$sanitize" -DRPMEM_CHAOS=OFF -DCMAKE_CXX_FLAGS=-Wno-maybe-uninitialized \
    -DCMAKE_C_FLAGS=-Wno-maybe-uninitialized >/dev/null ||
    { echo "sanitize.sh: configuring $build failed (see above)" >&2; exit 2; }
fi
built_from=$(date +%s)
cmake --build "$build" -j"$(nproc)" ||
  { echo "sanitize.sh: building $build with -fsanitize=$sanitize failed (see above)" >&2; exit 2; }
echo "sanitize.sh: $kind: build took $(($(date +%s) - built_from)) s"
build=$(cd "$build" && pwd)

logs=$build/sanitizer-logs
rm -rf "$logs" "$logs.known"
mkdir -p "$logs"
supp=$root/tests/sanitizers
# halt_on_error + exitcode: the first report ends the process with a distinctive status;
# log_path: the report also lands in a file (pid appended) that this script checks at the end.
case "$kind" in
asan)
  asan="halt_on_error=1:exitcode=86:detect_leaks=1:detect_stack_use_after_return=1"
  asan+=":check_initialization_order=1:strict_init_order=1:log_path=$logs/asan:log_exe_name=1"
  asan+=":suppressions=$supp/asan.supp"
  ubsan="halt_on_error=1:print_stacktrace=1:exitcode=87:log_path=$logs/ubsan:log_exe_name=1"
  ubsan+=":suppressions=$supp/ubsan.supp"
  lsan="suppressions=$supp/lsan.supp:print_suppressions=0"
  export ASAN_OPTIONS=$asan UBSAN_OPTIONS=$ubsan LSAN_OPTIONS=$lsan
  export RPMEM_TEST_DAEMON_ENV="ASAN_OPTIONS=$asan UBSAN_OPTIONS=$ubsan LSAN_OPTIONS=$lsan"
  ;;
tsan)
  tsan="halt_on_error=1:exitcode=88:second_deadlock_stack=1:history_size=4"
  tsan+=":log_path=$logs/tsan:log_exe_name=1:suppressions=$supp/tsan.supp"
  export TSAN_OPTIONS=$tsan
  export RPMEM_TEST_DAEMON_ENV="TSAN_OPTIONS=$tsan"
  ;;
esac

# Tests grouped by the program they run (ctest's JSON listing): the list of test numbers for
# `ctest -I 0,0,0,N,M,...`. Selection by binary survives renamed test cases.
select_tests() { # $1: python predicate on `exe` (basename of the test's command)
  ctest --test-dir "$build" --show-only=json-v1 | python3 -c '
import json, os, sys
pred = sys.argv[1]
tests = json.load(sys.stdin)["tests"]
picked = [str(i + 1) for i, t in enumerate(tests)
          if eval(pred, {"exe": os.path.basename(t.get("command", [""])[0]),
                         "name": t.get("name", ""),
                         "cmd": " ".join(t.get("command", [""])), "re": __import__("re")})]
print(",".join(picked))
' "$1"
}

# The random-kill tests repeat one scenario at random points (RPMEM_TEST_ASYNC_KILLS: 25 kills
# of the async C ABI test and 24 of replicated_pool's async writer in scripts/test.sh;
# RPMEM_TEST_OUTAGE_KILLS: 20 rounds; RPMEM_TEST_TOOL_KILLS: every point of the rpmem sync and
# check --repair kill tests); instrumented, a few rounds run each path of it through the
# sanitizers, and the normal build's rounds look for the rare point (CI's time budget).
export RPMEM_TEST_ASYNC_KILLS=${RPMEM_TEST_ASYNC_KILLS:-8} RPMEM_TEST_OUTAGE_KILLS=${RPMEM_TEST_OUTAGE_KILLS:-4}
export RPMEM_TEST_TOOL_KILLS=${RPMEM_TEST_TOOL_KILLS:-few}

jobs=$(($(nproc) * 2))
status=0
run_ctest() { # $1: label for the summary, $2: test numbers, rest: extra env assignments
  local what=$1 list=$2
  shift 2
  if [ -z "$list" ]; then
    echo "sanitize.sh: no tests selected for $what" >&2
    status=1
    return
  fi
  echo "sanitize.sh: $kind: $what ($(tr ',' '\n' <<<"$list" | wc -l) tests)"
  env "$@" ctest --test-dir "$build" --output-on-failure --timeout 600 -j"$jobs" --no-tests=ignore \
    -I "0,0,0,$list" "${extra[@]}" || status=1
}
extra=("$@")

lib=$(gcc -print-file-name="$runtime")
# A test of an instrumented program that also runs a foreign one (pmempool sync in the async
# C ABI test) preloads this into that program, so it can dlopen our instrumented librpmem.
export RPMEM_TEST_FOREIGN_PRELOAD="$lib $(gcc -print-file-name=libstdc++.so.6)"
# Tests that run programs the project's build did not instrument against our instrumented
# libraries: Debian's pmempool/libpmemobj (stock tools, rpmem tool tests), consumer programs
# built from the packages or with pkg-config (integration_package, tests/abi/pkgconfig.sh).
foreign_re=${SANITIZE_FOREIGN:-integration_stock_tools|integration_tool|pkgconfig\.sh}
# Export-list checks (tests/abi/exports*.sh) inspect the shipped libraries' symbol tables;
# instrumentation changes them (ASan makes rpmem::error's typeinfo/vtable local data), so they
# only run in the normal build (scripts/test.sh).
# The package tests only run CPack and dpkg-deb, and CPack hangs (futex wait in its archive
# threads) with a sanitizer runtime preloaded: they run in the normal build only.
skip_re='exports.*\.sh|integration_package'
# Checks of the sources and docs that run none of the project's programs (clang-format, man,
# compiling README snippets, listing documented keys, test names): nothing to instrument, and
# the normal build runs them.
static_re='.*(format\.sh|man -l|readme_cpp\.py|env_keys\.py|test_names\.py).*'
case "$kind" in
asan)
  # Programs built by the project run instrumented as they are. Foreign programs need the ASan
  # runtime (and libstdc++, whose __cxa_throw it intercepts) preloaded; leak checking is off
  # there because those programs' own allocations are not ours to judge.
  own=$(select_tests "not re.fullmatch(r'$foreign_re|$skip_re', exe) and not re.fullmatch(r'$static_re', cmd)")
  foreign=$(select_tests "re.fullmatch(r'$foreign_re', exe) is not None")
  run_ctest "tests of instrumented programs" "$own"
  if [ -n "$foreign" ]; then
    run_ctest "tests running programs built elsewhere (ASan runtime preloaded)" "$foreign" \
      LD_PRELOAD="$lib $(gcc -print-file-name=libstdc++.so.6)" \
      ASAN_OPTIONS="$ASAN_OPTIONS:detect_leaks=0"
  fi
  ;;
tsan)
  # The multi-threaded tests: everything but the ssh tests (libssh only, one thread), tests
  # of foreign programs (an uninstrumented libpmemobj's threads are invisible to TSan), the
  # shell-script ABI checks, and the outage scenarios of stock libpmemobj (integration_outage:
  # minutes of faults whose threads are libpmemobj's; resilient_pool's own threads run under
  # TSan in integration_capi, whose pools all go through it).
  # integration_top and integration_rules run the same stock-libpmemobj writers through a
  # replica's loss and online catch-up. The catch-up reads blocks of the master while
  # libpmemobj writes them, by design (a block written meanwhile is dirty again and sent again;
  # the last round holds the calls), and TSan reports that as a race on the pool's memory.
  exclude=${TSAN_EXCLUDE:-integration_ssh|abi_header_test|integration_package|integration_outage|integration_top|integration_rules|$foreign_re|.*\.sh}
  # The same read, by replicated_pool's catch-up and resync, of blocks its test's four
  # threads write meanwhile: those four tests by name (the rest of integration_replication
  # runs). They run in the plain suite and under ASan.
  exclude_names=${TSAN_EXCLUDE_NAMES:-.*(caught up by itself while four threads persist|resync while four threads persist|while a re-created replica is caught up|ending a frozen replica.s old session holds no call).*}
  run_ctest "multi-threaded tests" "$(select_tests "not re.fullmatch(r'$exclude', exe) and not re.fullmatch(r'$static_re', cmd) and not re.fullmatch(r'$exclude_names', name)")"
  ;;
esac

# Leak reports proven to be third-party (tests/sanitizers/known-leaks: one allocation site of one
# exact library build each) are counted and kept, not failed; every other report fails the run.
reports=
while read -r verdict f; do
  if [ "$verdict" = known ]; then
    mkdir -p "$logs.known"
    mv "$f" "$logs.known/"
    echo "sanitize.sh: $kind: known third-party leak, not rpmem's (tests/sanitizers/known-leaks): $logs.known/$(basename "$f")"
  else
    reports+="$f "
  fi
done < <(find "$logs" -type f | sort | xargs -r python3 "$supp/known_leaks.py" "$supp/known-leaks")
if [ -n "$reports" ]; then
  echo "sanitize.sh: $kind: sanitizer reports (each fails the run):" >&2
  for f in $reports; do
    echo "==== $f" >&2
    head -c 20000 "$f" >&2
  done
  status=1
fi
if [ "$status" -ne 0 ]; then
  echo "sanitize.sh: $kind: FAILED (test failures or sanitizer reports above; logs in $logs)" >&2
else
  echo "sanitize.sh: $kind: clean (no test failures, no sanitizer reports)"
fi
exit "$status"
