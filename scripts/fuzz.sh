#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz) with clang in build-fuzz/ and runs each for SECONDS
# (default 60) on a copy of its seed corpus (tests/fuzz/corpus/<target>/; the repository's
# corpus is never modified). Prints executions and findings per target.
#   scripts/fuzz.sh [SECONDS] [TARGET...]      TARGET: control lane poolset config metrics (default all)
# Exit status: 0 when no target found anything; 1 on a crash/leak/timeout/sanitizer report
# (the reproducer is kept under FUZZ_OUT, default build-fuzz/findings/, and its path printed);
# 2 on a build or usage error. FUZZ_JOBS=N runs N targets at once (default 1).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
seconds=${1:-60}
shift || true
case "$seconds" in '' | *[!0-9]*) echo "fuzz.sh: SECONDS must be a number, got '$seconds'" >&2; exit 2 ;; esac
targets=("$@")
((${#targets[@]})) || targets=(control lane poolset config metrics)

build=${FUZZ_BUILD_DIR:-build-fuzz}
out=${FUZZ_OUT:-$build/findings}
jobs=${FUZZ_JOBS:-1}

command -v clang++ >/dev/null || { echo "fuzz.sh: clang++ not found: run scripts/install-deps.sh" >&2; exit 2; }
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S . -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Debug \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DRPMEM_FUZZ=ON -DRPMEM_BUILD_TESTS=OFF >/dev/null ||
    { echo "fuzz.sh: configuring $build failed (see above)" >&2; exit 2; }
fi
names=()
for t in "${targets[@]}"; do names+=("${t}_fuzz"); done
mkdir -p "$build"
build=$(cd "$build" && pwd)
cmake --build "$build" -j"$(nproc)" --target "${names[@]}" >"$build/fuzz-build.log" 2>&1 ||
  { cat "$build/fuzz-build.log" >&2; echo "fuzz.sh: building the fuzz targets in $build failed (see above)" >&2; exit 2; }

run_dir=$(mktemp -d "${TMPDIR:-/tmp}/rpmem-fuzz.XXXXXX")
trap 'rm -rf "$run_dir"' EXIT
mkdir -p "$out"
out=$(cd "$out" && pwd)

# One target: copy the seeds, fuzz, keep the log. libFuzzer's exit status is non-zero on any
# finding; its last "#N DONE ... exec/s" line (or the crash's "stat::number_of_executed_units")
# gives the executions.
run_one() {
  local t=$1 bin="$build/fuzz/${1}_fuzz" corpus="$run_dir/$1/corpus"
  rm -rf "${out:?}/$t"
  mkdir -p "$corpus" "$out/$t"
  cp -r "$root/tests/fuzz/corpus/$t/." "$corpus/"
  local extra=()
  [ "$t" = control ] && extra=(-max_len=70000)
  set +e
  (cd "$run_dir/$t" && "$bin" "${extra[@]}" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$out/$t/" "$corpus") >"$run_dir/$t/log" 2>&1
  echo $? >"$run_dir/$t/rc"
  set -e
}

pids=()
for t in "${targets[@]}"; do
  [ -d "tests/fuzz/corpus/$t" ] || { echo "fuzz.sh: no seed corpus tests/fuzz/corpus/$t" >&2; exit 2; }
  run_one "$t" &
  pids+=($!)
  if ((${#pids[@]} >= jobs)); then wait "${pids[0]}"; pids=("${pids[@]:1}"); fi
done
for p in "${pids[@]}"; do wait "$p"; done

failed=0
printf '%-10s %12s %10s %8s %9s  %s\n' target executions exec/s corpus findings result
for t in "${targets[@]}"; do
  log="$run_dir/$t/log" rc=$(cat "$run_dir/$t/rc")
  # Each may find nothing (a crash on a seed prints no statistics): never fatal under pipefail.
  execs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | tail -1 | awk '{print $2}' || true)
  [ -n "$execs" ] || execs=$(grep -oE '^#[0-9]+' "$log" | tail -1 | tr -d '#' || true)
  rate=$(grep -oE 'stat::average_exec_per_sec: *[0-9]+' "$log" | tail -1 | awk '{print $2}' || true)
  units=$(grep -oE '^#[0-9]+.*corp: [0-9]+' "$log" | tail -1 | sed -E 's/.*corp: //' || true)
  artifacts=$(grep -oE "Test unit written to [^ ]+" "$log" | awk '{print $5}' || true)
  nfind=$(printf '%s' "$artifacts" | grep -c . || true)
  if [ "$rc" -ne 0 ] && [ "$nfind" -eq 0 ]; then nfind=1; fi
  result=ok
  if [ "$rc" -ne 0 ]; then
    result="FAILED (exit $rc)"
    failed=1
  fi
  printf '%-10s %12s %10s %8s %9s  %s\n' "$t" "${execs:-?}" "${rate:-?}" "${units:-?}" "$nfind" "$result"
  if [ "$rc" -ne 0 ]; then
    cp "$log" "$out/$t/fuzz.log"
    echo "  $t: libFuzzer log: $out/$t/fuzz.log" >&2
    grep -E '^==[0-9]+==ERROR|SUMMARY:|runtime error|invariant violated|deadly signal' "$log" | head -5 | sed 's/^/  /' >&2 || true
    for a in $artifacts; do
      echo "  $t: reproducer: $a (replay: $build/fuzz/${t}_fuzz $a)" >&2
    done
  fi
done
exit "$failed"
