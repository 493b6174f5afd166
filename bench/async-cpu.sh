#!/bin/bash
# Where the CPU goes in librpmem's asynchronous mode under stock libpmemobj (issue 17): for 1
# and 4 writer threads, the transactions per second and the machine's CPU use while the
# benchmark ran (all cores, from /proc/stat: user+system+softirq over the wall time), beside
# the same for local-only transactions. On a machine whose cores the replicator thread and
# rpmemd already fill with one writer, more writers cannot scale. Uses the build in build/.
# Usage: bench/async-cpu.sh [OPS] [ROUNDS]
cd "$(dirname "$0")/.."
ops=${1:-2000000}
rounds=${2:-3}
busy() { awk '/^cpu /{print $2+$3+$4+$7+$8, $5+$6}' /proc/stat; }
cores=$(nproc)
hz=$(getconf CLK_TCK)
for r in $(seq 1 "$rounds"); do
  for threads in 1 4; do
    read -r b0 i0 < <(busy)
    t0=$(date +%s.%N)
    out=$(RPMEM_REPLICATION=async SKIP_BUILD=1 scripts/bench.sh -s pmemobj \
      --pmemobj-threads "$threads" --pmemobj-ops "$ops" 2>&1 | grep -E "pmemobj-tx")
    t1=$(date +%s.%N)
    read -r b1 i1 < <(busy)
    awk -v b=$((b1 - b0)) -v i=$((i1 - i0)) -v hz="$hz" -v cores="$cores" -v t0="$t0" -v t1="$t1" \
      -v r="$r" -v th="$threads" -v out="$out" 'BEGIN {
        wall = t1 - t0; used = b / hz;
        printf "round %s threads %s: busy %.1f of %.1f core-seconds (%.0f %% of %d cores) in %.1f s\n%s\n",
          r, th, used, wall * cores, 100 * used / (wall * cores), cores, wall, out }'
  done
done
